// Gateway console: small progressive enhancement (the pages work without it).
// Copy buttons copy the text of the element named by data-copy; a submit button with a
// data-confirm sentence (revoke, reject, suspend) asks it first.
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
  if (b && b.dataset.confirm && !window.confirm(b.dataset.confirm)) {
    ev.preventDefault();
  }
});
