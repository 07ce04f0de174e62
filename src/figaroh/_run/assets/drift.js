(function () {
  "use strict";
  var SVGNS = "http://www.w3.org/2000/svg";
  function node(tag, attrs, parent) {
    var e = document.createElementNS(SVGNS, tag);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, String(attrs[k])); });
    if (parent) { parent.appendChild(e); }
    return e;
  }
  function isNum(v) { return typeof v === "number" && isFinite(v); }
  function band(chart, data, g) {
    var b = data.band, X = chart.X, Y = chart.Y, up = [], down = [];
    for (var i = 0; i < b.x.length; i++) {
      if (!isNum(b.lo[i]) || !isNum(b.hi[i])) { continue; }
      up.push(X(b.x[i]).toFixed(1) + "," + Y(b.hi[i]).toFixed(1));
      down.unshift(X(b.x[i]).toFixed(1) + "," + Y(b.lo[i]).toFixed(1));
    }
    if (up.length === 1) {
      var x = Number(up[0].split(",")[0]), y1 = Number(up[0].split(",")[1]);
      var y0 = Number(down[0].split(",")[1]);
      node("rect", {x: x - 5, y: y1, width: 10, height: Math.max(y0 - y1, 1),
        "class": "drift-band", fill: "#9aa0a6", opacity: 0.25}, g);
    } else if (up.length > 1) {
      node("polygon", {points: up.concat(down).join(" "), "class": "drift-band",
        fill: "#9aa0a6", opacity: 0.22}, g);
    }
  }
  function marks(chart, data, g) {
    var X = chart.X, Y = chart.Y, fmt = window.FigarohChart.format;
    var unit = data.unit ? " " + data.unit : "";
    data.robots.forEach(function (rb) {
      if (!rb.shown) { return; }
      rb.x.forEach(function (x, i) {
        var y = rb.y[i], s = rb.sigma[i], flagged = !!rb.flags[i];
        if (isNum(s) && s > 0) {
          node("line", {x1: X(x), x2: X(x), y1: Y(y - s), y2: Y(y + s), stroke: rb.color,
            "stroke-width": 1.2, "class": "drift-sigma"}, g);
        }
        var c = node("circle", {cx: X(x), cy: Y(y), r: flagged ? 5.5 : 2.8,
          fill: flagged ? "#ffffff" : rb.color, stroke: flagged ? "#c5221f" : rb.color,
          "stroke-width": flagged ? 2.5 : 1,
          "class": flagged ? "drift-point flagged" : "drift-point",
          "data-robot": rb.id, "data-run": rb.runs[i], "data-flagged": String(flagged)}, g);
        var t = node("title", {}, c);
        t.textContent = rb.id + " \u00b7 " + rb.times[i] + " \u00b7 " + fmt(y) +
          (isNum(s) ? " \u00b1 " + fmt(s) : "") + unit + (flagged ? " \u00b7 drift flagged" : "");
      });
    });
  }
  function overlay(chart, data) {
    var svg = chart.svg, lines = svg.querySelector("g.chart-lines");
    if (!lines || !chart.X || !chart.Y) { return; }
    var clip = "url(#" + chart.clipId + ")";
    var under = node("g", {"class": "drift-underlay", "clip-path": clip});
    svg.insertBefore(under, lines);
    band(chart, data, under);
    var over = node("g", {"class": "drift-marks", "clip-path": clip});
    svg.insertBefore(over, lines.nextSibling);
    marks(chart, data, over);
    svg.setAttribute("data-drift-ready", "true");
  }
  function init(panel) {
    var data;
    try { data = JSON.parse(panel.getAttribute("data-drift")); } catch (e) { return; }
    var svg = panel.querySelector("svg.drift-chart");
    if (!svg || !data || !window.FigarohChart) { return; }
    var chart = new window.FigarohChart(svg, {xLabel: data.xLabel, width: 720, height: 280});
    var render = window.FigarohChart.prototype.render;
    chart.render = function () { render.call(chart); overlay(chart, data); };
    var b = data.band, series = [
      {label: "fleet median", x: b.x, y: b.median, color: "#5f6368", dash: "6 3", width: 1.4},
      {label: "fleet median + spread", x: b.x, y: b.hi, color: "#bdc1c6", dash: "2 3", width: 1},
      {label: "fleet median \u2212 spread", x: b.x, y: b.lo, color: "#bdc1c6", dash: "2 3",
       width: 1}
    ];
    data.robots.forEach(function (rb) {
      if (rb.shown) {
        series.push({label: rb.id, x: rb.x, y: rb.y, color: rb.color,
                     width: rb.flagged ? 2.2 : 1.2});
      }
    });
    chart.setData([], series, data.unit || "", false);
    svg.figarohChart = chart;
  }
  function start() {
    Array.prototype.forEach.call(document.querySelectorAll(".drift-param[data-drift]"), init);
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
