// The metric page. Typing a From or To date switches Range to "Between dates" (they apply only there).
(function () {
  "use strict";
  var range = document.getElementById("f-range");
  ["f-from", "f-to"].forEach(function (id) {
    var field = document.getElementById(id);
    if (range && field) field.addEventListener("change", function () { if (field.value) range.value = "dates"; });
  });
})();

// Draws a metric's series (the JSON the page embeds as #chart-data) with uPlot into #chart, in the time zone
// the page was asked for. The caption and the readings table are the accessible version; this is the picture.
// After drawing, #chart[data-drawn] holds the number of points drawn (the tests read it).
(function () {
  "use strict";
  var holder = document.getElementById("chart");
  var source = document.getElementById("chart-data");
  if (!holder || !source || typeof uPlot === "undefined") return;
  var chart = JSON.parse(source.textContent);
  var xs = chart.points.map(function (p) { return p[0]; });
  var ys = chart.points.map(function (p) { return p[1]; });
  if (!xs.length) { holder.dataset.drawn = "0"; holder.hidden = true; return; }
  var accent = getComputedStyle(document.documentElement).getPropertyValue("--accent").trim() || "#2f5bd3";
  var unit = chart.unit ? " " + chart.unit : "";
  var round = function (v) { return v == null ? "" : (Math.round(v * 100) / 100).toString(); };
  function size() {
    var width = Math.max(240, holder.clientWidth);
    return { width: width, height: width < 500 ? 220 : 320 };
  }
  var opts = Object.assign(size(), {
    tzDate: function (ts) { return uPlot.tzDate(new Date(ts * 1e3), chart.timeZone); },
    legend: { show: true },
    cursor: { points: { size: 8 } },
    scales: { x: { time: true } },
    series: [
      { label: "When", value: chart.bucket === "raw" ? "{D} {MMM} {YYYY} {HH}:{mm}" : "{D} {MMM} {YYYY}" },
      {
        label: chart.label, stroke: accent, width: 2, fill: accent + "14",
        points: { show: true, size: 6, fill: accent },
        value: function (u, v) { return v == null ? "" : round(v) + unit; },
      },
    ],
    axes: [
      { stroke: "#5b6472", grid: { stroke: "#eef0f3" } },
      { stroke: "#5b6472", grid: { stroke: "#eef0f3" }, size: 56, values: function (u, vals) { return vals.map(round); } },
    ],
  });
  var plot = new uPlot(opts, [xs, ys], holder);
  holder.dataset.drawn = String(plot.data[0].length);
  // Follow the width of the page at once (before the next paint), so a narrowed window never shows a clipped
  // chart; setting the same size again changes nothing, so this cannot loop.
  var width = holder.clientWidth;
  new ResizeObserver(function () {
    if (holder.clientWidth === width) return;
    width = holder.clientWidth;
    plot.setSize(size());
  }).observe(holder);
})();
