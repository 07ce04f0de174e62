
(function () {
  "use strict";
  var KEYS = ["nominal", "fitted", "measured"];
  var STYLE = {nominal: {color: "#9aa0a6", dash: "5 3"}, fitted: {color: "#1a73e8"},
               measured: {color: "#202124", width: 1}};
  function init(panel) {
    var data;
    try { data = JSON.parse(panel.getAttribute("data-series")); } catch (e) { return; }
    var select = panel.querySelector("select"), svg = panel.querySelector("svg");
    if (!select || !svg || !data || !data.names || !window.FigarohChart) { return; }
    data.names.forEach(function (n, i) {
      var o = document.createElement("option");
      o.value = String(i);
      o.textContent = n;
      select.appendChild(o);
    });
    var chart = new window.FigarohChart(svg, {xLabel: "sample"});
    var reset = document.createElement("button");
    reset.type = "button";
    reset.className = "chart-reset";
    reset.textContent = "Reset zoom";
    reset.addEventListener("click", function () { chart.reset(); });
    select.parentNode.parentNode.insertBefore(reset, select.parentNode.nextSibling);
    var labels = data.labels || KEYS;
    function redraw(keepView) {
      var name = data.names[Number(select.value) || 0];
      var series = [];
      KEYS.forEach(function (k, j) {
        var y = (data[k] || {})[name];
        if (!y) { return; }
        series.push({label: labels[j] || k, y: y, color: STYLE[k].color, dash: STYLE[k].dash,
                     width: STYLE[k].width});
      });
      chart.setData(data.time || [], series, data.unit || "", keepView);
    }
    select.addEventListener("change", function () { redraw(true); });
    panel.figarohChart = chart;
    redraw(false);
  }
  function start() {
    Array.prototype.forEach.call(document.querySelectorAll(".series-panel[data-series]"), init);
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
