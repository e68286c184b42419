// Gateway console: the live service view's charts, drawn with uPlot (static/uplot, MIT)
// from the series in #live-charts' data-series, and refreshed from its data-source every
// 30 s. Without JavaScript the page shows the range's figures only.
(function () {
  "use strict";
  var box = document.getElementById("live-charts");
  if (!box || !window.uPlot) return;
  var colors = ["#2f6fde", "#e0a23a", "#b3261e"];
  var plots = [];
  var last = null; // the series drawn

  function col(points, f) {
    return points.map(function (p) { var v = f(p); return v === undefined ? null : v; });
  }

  // Each chart: its series (label and value of a point) and the unit of its axis.
  var charts = {
    requests: { unit: "/s", series: [["requests/s", function (p) { return p.requests_per_second; }]] },
    errors: { unit: "%", series: [["error rate %", function (p) { return p.error_rate === null ? null : p.error_rate * 100; }]] },
    ttft: { unit: "ms", series: [
      ["p50", function (p) { return p.ttft_ms.p50; }],
      ["p90", function (p) { return p.ttft_ms.p90; }],
      ["p99", function (p) { return p.ttft_ms.p99; }]] },
    duration: { unit: "ms", series: [
      ["p50", function (p) { return p.duration_ms.p50; }],
      ["p90", function (p) { return p.duration_ms.p90; }],
      ["p99", function (p) { return p.duration_ms.p99; }]] },
    tokens: { unit: "", series: [
      ["in", function (p) { return p.prompt_tokens; }],
      ["out", function (p) { return p.completion_tokens; }]] },
    spend: { unit: "SEK", series: [["SEK", function (p) { return p.price_micro_sek / 1e6; }]] }
  };

  function pad(n) { return (n < 10 ? "0" : "") + n; }

  // Times are UTC, as on every console page: "14:05", with the date when the range spans
  // more than a day.
  function utc(secs, withDate) {
    var d = new Date(secs * 1000);
    var hm = pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes());
    return withDate ? d.getUTCFullYear() + "-" + pad(d.getUTCMonth() + 1) + "-" + pad(d.getUTCDate()) + " " + hm : hm;
  }

  function draw(data) {
    last = data;
    plots.forEach(function (u) { u.destroy(); });
    plots = [];
    var xs = data.points.map(function (p) { return Date.parse(p.t) / 1000; });
    var long = xs.length > 1 && xs[xs.length - 1] - xs[0] > 86400;
    box.querySelectorAll("figure[data-chart]").forEach(function (fig) {
      var c = charts[fig.dataset.chart];
      if (!c) return;
      var d = [xs], series = [{ label: "UTC", value: function (u, v) { return v === null ? "—" : utc(v, true); } }];
      c.series.forEach(function (s, i) {
        d.push(col(data.points, s[1]));
        // Points as well as lines: a step with traffic between empty ones is still seen.
        series.push({ label: s[0], stroke: colors[i % colors.length], width: 1.5, spanGaps: false,
          points: { show: true, size: 4, fill: colors[i % colors.length] },
          value: function (u, v) { return v === null ? "—" : (Math.round(v * 100) / 100) + (c.unit ? " " + c.unit : ""); } });
      });
      var opts = {
        width: Math.max(fig.clientWidth - 16, 240), height: 170, series: series,
        scales: { x: { time: true }, y: { range: function (u, min, max) { return [0, max > 0 ? max * 1.1 : 1]; } } },
        axes: [{ values: function (u, splits) { return splits.map(function (v) { return utc(v, long); }); } }, { size: 56 }],
        legend: { live: true }
      };
      var host = fig.querySelector(".plot");
      if (!host) {
        host = document.createElement("div");
        host.className = "plot";
        fig.appendChild(host);
      }
      plots.push(new uPlot(opts, d, host));
    });
    box.dataset.drawn = String(data.points.length);
  }

  function refresh() {
    if (!box.dataset.source || document.hidden) return;
    fetch(box.dataset.source, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (data) { if (data && data.points) draw(data); })
      .catch(function () {});
  }

  draw(JSON.parse(box.dataset.series));
  setInterval(refresh, 30000);
  var resizing;
  window.addEventListener("resize", function () {
    clearTimeout(resizing);
    resizing = setTimeout(function () { draw(last); }, 200);
  });
})();
