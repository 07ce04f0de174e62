
(function () {
  "use strict";
  if (window.FigarohChart) { return; }
  var SVGNS = "http://www.w3.org/2000/svg";
  var L = 64, R = 12, T = 12, B = 30;
  var clipCounter = 0;

  function node(tag, attrs, parent) {
    var e = document.createElementNS(SVGNS, tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, String(attrs[k])); });
    if (parent) { parent.appendChild(e); }
    return e;
  }
  function isNum(v) { return typeof v === "number" && isFinite(v); }
  function fmt(v) {
    if (!isNum(v)) { return "\u2014"; }
    var a = Math.abs(v);
    if (a !== 0 && (a >= 1e5 || a < 1e-3)) { return v.toExponential(3); }
    return String(Number(v.toPrecision(5)));
  }
  function ticks(lo, hi, n) {
    var span = hi - lo;
    if (!(span > 0)) { return [lo]; }
    var step = Math.pow(10, Math.floor(Math.log(span / n) / Math.LN10));
    var err = span / n / step;
    if (err >= 7.5) { step *= 10; }
    else if (err >= 3.5) { step *= 5; }
    else if (err >= 1.5) { step *= 2; }
    var out = [];
    for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9 && out.length < 50; v += step) {
      out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
    }
    return out;
  }
  function lowerBound(arr, v) {
    var lo = 0, hi = arr.length;
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      if (arr[mid] < v) { lo = mid + 1; } else { hi = mid; }
    }
    return lo;
  }

  /* An interactive line chart drawn into an <svg> (viewBox 0 0 width height,
     default 720 x 260; options: xLabel, width, height).
     Wheel: zoom around the cursor; drag: zoom to the selected range;
     double-click (or reset()): full range; hover: values of every series
     at the nearest sample. */
  function Chart(svg, options) {
    this.svg = svg;
    this.options = options || {};
    this.x = [];
    this.series = [];
    this.unit = "";
    this.view = null;
    this.drag = null;
    this.clipId = "figaroh-clip-" + (++clipCounter);
    this.W = this.options.width || 720;
    this.H = this.options.height || 260;
    svg.setAttribute("viewBox", "0 0 " + this.W + " " + this.H);
    var self = this;
    svg.addEventListener("wheel", function (ev) { self.onWheel(ev); }, {passive: false});
    svg.addEventListener("mousedown", function (ev) { self.onDown(ev); });
    svg.addEventListener("mousemove", function (ev) { self.onMove(ev); });
    svg.addEventListener("mouseup", function (ev) { self.onUp(ev); });
    svg.addEventListener("mouseleave", function () { self.drag = null; self.hideHover(); });
    svg.addEventListener("dblclick", function (ev) { ev.preventDefault(); self.reset(); });
  }
  /* series: [{label, color, dash, width, y: [...], x: optional own axis, visible}] */
  Chart.prototype.setData = function (x, series, unit, keepView) {
    var W = this.W, H = this.H;
    this.x = x || [];
    this.series = series || [];
    this.unit = unit || "";
    if (!keepView) { this.view = null; }
    this.render();
  };
  Chart.prototype.xOf = function (s) { return s.x || this.x; };
  Chart.prototype.fullRange = function () {
    var W = this.W, H = this.H;
    var lo = Infinity, hi = -Infinity, self = this;
    this.series.forEach(function (s) {
      var x = self.xOf(s);
      if (x.length) { lo = Math.min(lo, x[0]); hi = Math.max(hi, x[x.length - 1]); }
    });
    if (!isFinite(lo)) { return null; }
    if (hi === lo) { hi = lo + 1; }
    return [lo, hi];
  };
  Chart.prototype.range = function () {
    var W = this.W, H = this.H;
    var full = this.fullRange();
    if (!full) { return null; }
    return this.view || full;
  };
  Chart.prototype.zoomTo = function (x0, x1) {
    var W = this.W, H = this.H;
    var full = this.fullRange();
    if (!full || !isNum(x0) || !isNum(x1)) { return; }
    var lo = Math.max(full[0], Math.min(x0, x1)), hi = Math.min(full[1], Math.max(x0, x1));
    var minSpan = (full[1] - full[0]) * 1e-6;
    if (hi - lo <= minSpan) { return; }
    this.view = (lo <= full[0] && hi >= full[1]) ? null : [lo, hi];
    this.render();
  };
  Chart.prototype.reset = function () { this.view = null; this.render(); };
  Chart.prototype.toPlot = function (ev) {
    var W = this.W, H = this.H;
    var ctm = this.svg.getScreenCTM();
    if (!ctm) { return null; }
    var pt = this.svg.createSVGPoint();
    pt.x = ev.clientX; pt.y = ev.clientY;
    return pt.matrixTransform(ctm.inverse());
  };
  Chart.prototype.invX = function (px) {
    var W = this.W, H = this.H;
    var r = this.range();
    return r[0] + (px - L) / (W - L - R) * (r[1] - r[0]);
  };
  Chart.prototype.onWheel = function (ev) {
    var W = this.W, H = this.H;
    var p = this.toPlot(ev), r = this.range();
    if (!p || !r || p.x < L || p.x > W - R) { return; }
    ev.preventDefault();
    var c = this.invX(p.x), f = ev.deltaY < 0 ? 0.8 : 1.25;
    var full = this.fullRange();
    var lo = c - (c - r[0]) * f, hi = c + (r[1] - c) * f;
    if (hi - lo >= full[1] - full[0]) { this.reset(); return; }
    if (lo < full[0]) { hi += full[0] - lo; lo = full[0]; }
    if (hi > full[1]) { lo -= hi - full[1]; hi = full[1]; }
    this.zoomTo(lo, hi);
  };
  Chart.prototype.onDown = function (ev) {
    var W = this.W, H = this.H;
    var p = this.toPlot(ev);
    if (ev.button !== 0 || !p || p.x < L || p.x > W - R || !this.range()) { return; }
    ev.preventDefault();
    this.drag = {x0: p.x, x1: p.x};
  };
  Chart.prototype.onMove = function (ev) {
    var W = this.W, H = this.H;
    var p = this.toPlot(ev);
    if (!p) { return; }
    if (this.drag) {
      this.drag.x1 = Math.max(L, Math.min(W - R, p.x));
      var a = Math.min(this.drag.x0, this.drag.x1), b = Math.max(this.drag.x0, this.drag.x1);
      this.selRect.setAttribute("x", a);
      this.selRect.setAttribute("width", b - a);
      this.selRect.setAttribute("visibility", "visible");
      this.hideHover();
      return;
    }
    this.showHover(p.x);
  };
  Chart.prototype.onUp = function () {
    var W = this.W, H = this.H;
    var d = this.drag;
    this.drag = null;
    if (this.selRect) { this.selRect.setAttribute("visibility", "hidden"); }
    if (d && Math.abs(d.x1 - d.x0) > 4) { this.zoomTo(this.invX(d.x0), this.invX(d.x1)); }
  };
  Chart.prototype.hideHover = function () {
    var W = this.W, H = this.H;
    if (this.hover) { this.hover.setAttribute("visibility", "hidden"); }
  };
  Chart.prototype.showHover = function (px) {
    var W = this.W, H = this.H;
    var r = this.range();
    if (!r || !this.hover || px < L || px > W - R) { this.hideHover(); return; }
    var xv = this.invX(px), self = this, rows = [], snap = null;
    while (this.hover.firstChild) { this.hover.removeChild(this.hover.firstChild); }
    this.series.forEach(function (s) {
      if (s.visible === false) { return; }
      var x = self.xOf(s), i = lowerBound(x, xv);
      if (i >= x.length) { i = x.length - 1; }
      if (i > 0 && Math.abs(x[i - 1] - xv) <= Math.abs(x[i] - xv)) { i -= 1; }
      if (i < 0) { return; }
      if (snap === null) { snap = x[i]; }
      var v = s.y[i];
      rows.push({label: s.label, color: s.color, value: v});
      if (isNum(v) && x[i] >= r[0] && x[i] <= r[1]) {
        node("circle", {cx: self.X(x[i]), cy: self.Y(v), r: 3, fill: s.color}, self.hover);
      }
    });
    if (snap === null) { this.hideHover(); return; }
    var gx = this.X(Math.max(r[0], Math.min(r[1], snap)));
    this.hover.insertBefore(node("line", {x1: gx, y1: T, x2: gx, y2: H - B, stroke: "#5f6368",
      "stroke-dasharray": "3 3"}), this.hover.firstChild);
    var unit = this.unit ? " " + this.unit : "";
    var lines = [{text: (this.options.xLabel || "sample") + " " + fmt(snap), color: "#202124"}];
    rows.forEach(function (row) {
      lines.push({text: row.label + ": " + fmt(row.value) + unit, color: row.color});
    });
    var box = node("g", {"class": "chart-tooltip"}, this.hover);
    var bg = node("rect", {x: 0, y: 0, width: 10, height: 10, rx: 4, fill: "#ffffff",
      stroke: "#dadce0", opacity: 0.95}, box);
    var width = 0;
    lines.forEach(function (ln, k) {
      var t = node("text", {x: 8, y: 16 + 15 * k, "font-size": 11, fill: ln.color}, box);
      t.textContent = ln.text;
      var w;
      try { w = t.getComputedTextLength(); } catch (e) { w = ln.text.length * 6.5; }
      width = Math.max(width, w || ln.text.length * 6.5);
    });
    var bw = width + 16, bh = 15 * lines.length + 10;
    bg.setAttribute("width", bw);
    bg.setAttribute("height", bh);
    var tx = gx + 12 + bw > W - R ? gx - 12 - bw : gx + 12;
    box.setAttribute("transform", "translate(" + Math.max(0, tx) + "," + (T + 4) + ")");
    this.hover.setAttribute("visibility", "visible");
    this.svg.setAttribute("data-hover", String(snap));
  };
  Chart.prototype.render = function () {
    var W = this.W, H = this.H;
    var svg = this.svg, self = this;
    while (svg.firstChild) { svg.removeChild(svg.firstChild); }
    this.hover = null;
    this.selRect = null;
    var r = this.range();
    function message(text) {
      var t = node("text", {x: L, y: H / 2, "font-size": 12, fill: "#5f6368"}, svg);
      t.textContent = text;
      svg.setAttribute("data-points", "0");
    }
    if (!r) { message("No series to draw."); return; }
    var lo = Infinity, hi = -Infinity, visible = [];
    this.series.forEach(function (s) {
      if (s.visible === false) { return; }
      var x = self.xOf(s), y = s.y || [];
      var i0 = Math.max(0, lowerBound(x, r[0]) - 1);
      var i1 = Math.min(x.length - 1, lowerBound(x, r[1]));
      for (var i = i0; i <= i1; i++) {
        var v = y[i];
        if (isNum(v)) { if (v < lo) { lo = v; } if (v > hi) { hi = v; } }
      }
      visible.push({s: s, x: x, i0: i0, i1: i1});
    });
    if (!isFinite(lo)) { message("No finite samples in this range."); return; }
    if (hi === lo) { hi += 1; lo -= 1; }
    var pad = (hi - lo) * 0.05;
    lo -= pad; hi += pad;
    this.X = function (v) { return L + (v - r[0]) / (r[1] - r[0]) * (W - L - R); };
    this.Y = function (v) { return T + (hi - v) / (hi - lo) * (H - T - B); };
    var X = this.X, Y = this.Y;
    var axes = node("g", {"class": "chart-axes"}, svg);
    ticks(lo, hi, 5).forEach(function (v) {
      if (v < lo || v > hi) { return; }
      node("line", {x1: L, y1: Y(v), x2: W - R, y2: Y(v), stroke: "#eceff1"}, axes);
      var t = node("text", {x: L - 6, y: Y(v) + 4, "font-size": 10, fill: "#5f6368",
        "text-anchor": "end"}, axes);
      t.textContent = fmt(v);
    });
    ticks(r[0], r[1], 6).forEach(function (v) {
      if (v < r[0] || v > r[1]) { return; }
      node("line", {x1: X(v), y1: H - B, x2: X(v), y2: H - B + 4, stroke: "#9aa0a6"}, axes);
      var t = node("text", {x: X(v), y: H - B + 16, "font-size": 10, fill: "#5f6368",
        "text-anchor": "middle"}, axes);
      t.textContent = fmt(v);
    });
    node("line", {x1: L, y1: T, x2: L, y2: H - B, stroke: "#9aa0a6"}, axes);
    node("line", {x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: "#9aa0a6"}, axes);
    if (this.unit) {
      // along the y axis, left of the tick labels: a long unit ([N·m·s/rad])
      // never runs into the top tick label
      var yMid = (T + H - B) / 2;
      var u = node("text", {x: 10, y: yMid, "font-size": 10, fill: "#5f6368",
        "text-anchor": "middle", transform: "rotate(-90 10 " + yMid + ")",
        "class": "chart-unit"}, axes);
      u.textContent = "[" + this.unit + "]";
    }
    var defs = node("defs", {}, svg);
    var clip = node("clipPath", {id: this.clipId}, defs);
    node("rect", {x: L, y: T, width: W - L - R, height: H - T - B}, clip);
    var plot = node("g", {"clip-path": "url(#" + this.clipId + ")", "class": "chart-lines"}, svg);
    var budget = 2 * (W - L - R), drawn = 0;
    visible.forEach(function (vs) {
      var s = vs.s, x = vs.x, y = s.y || [], d = "", pen = false;
      var count = vs.i1 - vs.i0 + 1;
      function add(xi, v) {
        d += (pen ? "L" : "M") + X(xi).toFixed(1) + " " + Y(v).toFixed(1);
        pen = true;
        drawn += 1;
      }
      if (count <= budget) {
        for (var i = vs.i0; i <= vs.i1; i++) {
          if (isNum(y[i])) { add(x[i], y[i]); } else { pen = false; }
        }
      } else {
        var per = count / (budget / 2);
        for (var b = 0; b < budget / 2; b++) {
          var a0 = vs.i0 + Math.floor(b * per);
          var a1 = Math.min(vs.i1, vs.i0 + Math.floor((b + 1) * per) - 1);
          var imin = -1, imax = -1;
          for (var k = a0; k <= a1; k++) {
            if (!isNum(y[k])) { continue; }
            if (imin < 0 || y[k] < y[imin]) { imin = k; }
            if (imax < 0 || y[k] > y[imax]) { imax = k; }
          }
          if (imin < 0) { pen = false; continue; }
          var first = Math.min(imin, imax), second = Math.max(imin, imax);
          add(x[first], y[first]);
          if (second !== first) { add(x[second], y[second]); }
        }
      }
      if (d) {
        var attrs = {d: d, fill: "none", stroke: s.color || "#1a73e8",
                     "stroke-width": s.width || 1.3};
        if (s.dash) { attrs["stroke-dasharray"] = s.dash; }
        node("path", attrs, plot);
      }
    });
    this.selRect = node("rect", {x: L, y: T, width: 0, height: H - T - B, fill: "#1a73e8",
      opacity: 0.15, visibility: "hidden"}, svg);
    this.hover = node("g", {"class": "chart-hover", visibility: "hidden",
      "pointer-events": "none"}, svg);
    svg.setAttribute("data-x0", String(r[0]));
    svg.setAttribute("data-x1", String(r[1]));
    svg.setAttribute("data-points", String(drawn));
    svg.setAttribute("data-zoomed", this.view ? "true" : "false");
  };
  window.FigarohChart = Chart;
  window.FigarohChart.format = fmt;
})();
