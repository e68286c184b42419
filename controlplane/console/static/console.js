// Gateway console: small progressive enhancement (the pages work without it).
// Copy buttons copy the text of the element named by data-copy; forms whose submit
// button has class "revoke" or "reject" ask for confirmation first.
document.addEventListener("click", function (ev) {
  var b = ev.target.closest("button.copy");
  if (!b) return;
  var el = document.getElementById(b.dataset.copy);
  if (!el || !navigator.clipboard) return;
  navigator.clipboard.writeText(el.textContent).then(function () {
    b.textContent = "Copied";
  });
});
document.addEventListener("submit", function (ev) {
  var b = ev.submitter;
  if (b && (b.classList.contains("revoke") || b.classList.contains("reject")) && !window.confirm(b.textContent + "?")) {
    ev.preventDefault();
  }
});
