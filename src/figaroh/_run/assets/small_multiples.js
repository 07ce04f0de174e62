(function () {
  "use strict";
  /* Small multiples: one interactive chart per joint (or marker axis). Each
     .multi-panel[data-multi] holds {time, xLabel, joints: [{name, unit,
     series: [{label, role, y, hidden}]}]}; each svg.multi-chart[data-joint=i]
     in it draws joint i with window.FigarohChart (hover read-out, wheel / drag
     zoom, double-click reset). A legend checkbox input[data-role] shows or
     hides the series of that role in every chart of its panel (the vertical
     axis follows the visible series). */
  var STYLE = {
    measured: {color: "#80868b", width: 1.2},
    identified: {color: "#d93025", dash: "6 3", width: 1.6},
    nominal: {color: "#1a73e8", dash: "2 3", width: 1.2},
    residual: {color: "#8430ce", width: 1.1},
    calibrated: {color: "#d93025", width: 1.6},
    reference: {color: "#188038", dash: "6 3", width: 1.2},
    edge: {color: "#f29900", width: 2.4}
  };
  function init(panel) {
    var data;
    try { data = JSON.parse(panel.getAttribute("data-multi")); } catch (e) { return; }
    if (!data || !data.joints || !window.FigarohChart) { return; }
    var charts = [];
    Array.prototype.forEach.call(panel.querySelectorAll("svg.multi-chart[data-joint]"), function (svg) {
      var joint = data.joints[Number(svg.getAttribute("data-joint"))];
      if (!joint) { return; }
      var chart = new window.FigarohChart(svg, {xLabel: data.xLabel || "t [s]", width: 480,
                                                height: 220});
      var series = (joint.series || []).map(function (s) {
        var st = STYLE[s.role] || {};
        return {label: s.label, role: s.role, y: s.y, color: st.color, dash: st.dash,
                width: st.width, visible: !s.hidden};
      });
      chart.setData(data.time || [], series, joint.unit || "", false);
      svg.figarohChart = chart;
      charts.push(chart);
    });
    Array.prototype.forEach.call(panel.querySelectorAll("input[data-role]"), function (box) {
      box.addEventListener("change", function () {
        var role = box.getAttribute("data-role");
        charts.forEach(function (chart) {
          chart.series.forEach(function (s) { if (s.role === role) { s.visible = box.checked; } });
          chart.render();
        });
      });
    });
  }
  function start() {
    Array.prototype.forEach.call(document.querySelectorAll(".multi-panel[data-multi]"), init);
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
