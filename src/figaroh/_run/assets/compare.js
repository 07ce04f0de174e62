
(function () {
  "use strict";
  var RATIO_LIMIT = Number(document.body.getAttribute("data-ratio-limit")) || 2;
  var COLORS = {a: "#1a73e8", b: "#e8710a"};
  var QUANTITIES = {
    identification: [["residual", "residual (measured \u2212 identified)"],
                     ["fitted", "identified prediction"], ["measured", "measured"],
                     ["nominal", "nominal (CAD) prediction"]],
    calibration: [["fitted", "calibrated error"], ["nominal", "nominal error"]]
  };
  var runs = {a: null, b: null}, files = {a: "", b: ""}, chart = null;

  function $(id) { return document.getElementById(id); }
  function isObj(v) { return v !== null && typeof v === "object" && !Array.isArray(v); }
  function isNum(v) { return typeof v === "number" && isFinite(v); }
  function fmt(v) { return window.FigarohChart.format(v); }
  function clear(e) { while (e.firstChild) { e.removeChild(e.firstChild); } }
  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    if (cls) { e.className = cls; }
    return e;
  }
  function tr(cells, cls) {
    var row = el("tr", null, cls);
    cells.forEach(function (c) {
      var td = el("td", c && typeof c === "object" ? c.text : c, c && c.cls ? c.cls : null);
      row.appendChild(td);
    });
    return row;
  }
  function show(id, on) { $(id).style.display = on ? "" : "none"; }
  function shortHash(h) {
    if (typeof h !== "string" || !h) { return "unavailable"; }
    return /^(unknown|unavailable|not_found)/.test(h) ? h : h.slice(0, 12);
  }
  function knownHash(h) {
    return typeof h === "string" && h.length > 0 && !/^(unknown|unavailable|not_found)/.test(h);
  }
  function get(obj, path) {
    var cur = obj;
    for (var i = 0; i < path.length; i++) {
      if (!isObj(cur)) { return undefined; }
      cur = cur[path[i]];
    }
    return cur;
  }
  function value(v) {
    if (v === undefined) { return "absent"; }
    if (v === null) { return "\u2014"; }
    if (typeof v === "number") { return fmt(v); }
    if (typeof v === "boolean") { return v ? "true" : "false"; }
    if (typeof v === "string") { return v; }
    return JSON.stringify(v);
  }

  function validate(d) {
    if (!isObj(d)) { return "the file does not hold a JSON object"; }
    if (!isObj(d.metrics)) { return "no \"metrics\" object: not a *_verification.json export"; }
    if (typeof d.status !== "string" && typeof d.passed !== "boolean") {
      return "no \"status\" or \"passed\": not a verification export";
    }
    return "";
  }
  function domainOf(d) {
    var task = get(d, ["metadata", "task"]);
    if (task === "identification" || task === "calibration") { return task; }
    if (Array.isArray(get(d, ["compat", "active_joints"]))) { return "identification"; }
    if (Array.isArray(get(d, ["compat", "dof_names"]))) { return "calibration"; }
    return "unknown";
  }
  function namesOf(d) {
    var n = get(d, ["compat", "active_joints"]) || get(d, ["compat", "dof_names"]);
    return Array.isArray(n) ? n.map(String) : null;
  }
  function sameList(a, b) {
    if (a.length !== b.length) { return false; }
    for (var i = 0; i < a.length; i++) { if (a[i] !== b[i]) { return false; } }
    return true;
  }
  function describe(d) {
    var parts = [domainOf(d), "status " + (d.status || (d.passed ? "pass" : "fail"))];
    var id = get(d, ["metadata", "run_id"]);
    if (typeof id === "string") { parts.push(id); }
    return parts.join(" \u00b7 ");
  }

  /* Each row: {label, a, b, state: ok|mismatch|unknown|"", blocks: bool}. */
  function compatRows(A, B) {
    var rows = [];
    function add(label, a, b, state, blocks) {
      rows.push({label: label, a: a, b: b, state: state, blocks: !!blocks});
    }
    add("File", files.a, files.b, "", false);
    add("Run id", get(A, ["metadata", "run_id"]), get(B, ["metadata", "run_id"]), "", false);
    add("Robot", get(A, ["metadata", "model", "robot_name"]),
        get(B, ["metadata", "model", "robot_name"]), "", false);
    add("Git commit", shortHash(get(A, ["metadata", "software", "git_commit"])),
        shortHash(get(B, ["metadata", "software", "git_commit"])), "", false);
    var da = domainOf(A), db = domainOf(B);
    var st = (da === "unknown" || db === "unknown") ? "unknown" : (da === db ? "ok" : "mismatch");
    add("Domain", da, db, st, st !== "ok");
    var sa = A.schema_version, sb = B.schema_version;
    st = (sa === undefined || sb === undefined) ? "unknown" : (sa === sb ? "ok" : "mismatch");
    add("Schema version", sa, sb, st, st === "mismatch");
    var na = namesOf(A), nb = namesOf(B);
    st = (!na || !nb) ? "unknown" : (sameList(na, nb) ? "ok" : "mismatch");
    add(da === "calibration" ? "DOF names" : "Active joints", na ? na.join(", ") : "unavailable",
        nb ? nb.join(", ") : "unavailable", st, st !== "ok");
    if (da === "identification" || db === "identification") {
      var xa = get(A, ["compat", "decimate"]), xb = get(B, ["compat", "decimate"]);
      st = (typeof xa !== "boolean" || typeof xb !== "boolean") ? "unknown"
        : (xa === xb ? "ok" : "mismatch");
      add("Decimation", xa, xb, st, st === "mismatch");
    }
    var ka = get(A, ["compat", "sample_count"]), kb = get(B, ["compat", "sample_count"]);
    st = "unknown";
    if (isNum(ka) && isNum(kb) && ka > 0 && kb > 0) {
      st = Math.max(ka, kb) / Math.min(ka, kb) <= RATIO_LIMIT ? "ok" : "mismatch";
    }
    add("Sample count (ratio \u2264 " + RATIO_LIMIT + ")", ka, kb, st, st === "mismatch");
    var ha = get(A, ["compat", "config_sha256"]), hb = get(B, ["compat", "config_sha256"]);
    st = (knownHash(ha) && knownHash(hb)) ? (ha === hb ? "ok" : "mismatch") : "unknown";
    add("Configuration sha256", shortHash(ha), shortHash(hb), st, st === "mismatch");
    st = A.scope === B.scope ? "ok" : "mismatch";
    add("Verification scope (informative)", A.scope, B.scope, st, false);
    return rows;
  }

  function renderCompat(rows, blocking) {
    var box = $("compat-status");
    clear(box);
    var msg;
    if (blocking.length) {
      msg = el("p", "Incompatible runs (" + blocking.map(function (r) { return r.label; })
        .join(", ") + "): the comparison is blocked. Tick \u201cCompare anyway\u201d to " +
        "override.", "compat-block");
    } else {
      msg = el("p", "Compatible: same domain, joints/DOFs, settings and configuration.",
               "compat-ok");
    }
    msg.id = "compat-message";
    box.appendChild(msg);
    var table = el("table", null, "data");
    table.id = "compat-table";
    var head = el("thead");
    head.appendChild(tr(["Criterion", "Run A", "Run B", "Result"]));
    table.appendChild(head);
    var body = el("tbody");
    rows.forEach(function (r) {
      var text = {ok: "\u2713 match", mismatch: "\u2717 mismatch", unknown: "? unknown"}[r.state]
        || "";
      if (r.blocks) { text += " (blocks)"; }
      body.appendChild(tr([r.label, value(r.a), value(r.b),
                           {text: text, cls: r.state ? "state-" + r.state : null}]));
    });
    table.appendChild(body);
    box.appendChild(table);
  }

  function direction(name) {
    var n = name.toLowerCase();
    if (/(correlation|improvement)/.test(n)) { return 1; }
    if (/(rmse|error|bias|condition|outlier|unpredictable|mae|max)/.test(n)) { return -1; }
    return 0;
  }
  function renderDiff(A, B) {
    var body = $("diff-table-body");
    clear(body);
    var sa = A.status || "", sb = B.status || "";
    body.appendChild(tr(["verdict status", sa, sb, sa === sb ? "same" : "changed", ""]));
    var keys = [], seen = {};
    [A.metrics, B.metrics].forEach(function (m) {
      Object.keys(m).forEach(function (k) { if (!seen[k]) { seen[k] = true; keys.push(k); } });
    });
    keys.forEach(function (k) {
      var va = A.metrics[k], vb = B.metrics[k], d = "\u2014", p = "\u2014", cls = null;
      if (isNum(va) && isNum(vb)) {
        var delta = vb - va;
        d = (delta > 0 ? "+" : "") + fmt(delta);
        if (va !== 0) {
          p = (delta > 0 ? "+" : "") + (delta / Math.abs(va) * 100).toFixed(1) + "%";
        }
        var dir = direction(k) * (delta > 0 ? 1 : (delta < 0 ? -1 : 0));
        cls = dir > 0 ? "better" : (dir < 0 ? "worse" : null);
      }
      var row = tr([k, value(va), value(vb), {text: d, cls: cls}, {text: p, cls: cls}],
                   (va === undefined || vb === undefined) ? "absent" : null);
      row.setAttribute("data-metric", k);
      body.appendChild(row);
    });
  }
  function renderChecks(A, B) {
    var body = $("checks-table-body");
    clear(body);
    var names = [], byA = {}, byB = {};
    function collect(d, into) {
      (Array.isArray(d.checks) ? d.checks : []).forEach(function (c) {
        if (!isObj(c)) { return; }
        var n = String(c.name);
        if (!(n in byA) && !(n in byB)) { names.push(n); }
        into[n] = c.status || (c.passed ? "pass" : "fail");
      });
    }
    collect(A, byA);
    collect(B, byB);
    names.forEach(function (n) {
      var a = byA[n] || "absent", b = byB[n] || "absent";
      body.appendChild(tr([n, {text: a, cls: "status-" + a}, {text: b, cls: "status-" + b},
                           a === b ? "same" : "changed"]));
    });
  }

  function seriesNames(d) {
    var n = get(d, ["series", "joint_names"]) || get(d, ["series", "dof_names"]) || [];
    return Array.isArray(n) ? n.map(String) : [];
  }
  /* One series of one joint/DOF: {name: [...]} blocks, or lists aligned with the names. */
  function block(d, q, name) {
    var b = get(d, ["series", q]), arr = null;
    if (Array.isArray(b)) {
      var k = seriesNames(d).indexOf(name);
      arr = k >= 0 ? b[k] : null;
    } else if (isObj(b) && Object.prototype.hasOwnProperty.call(b, name)) {
      arr = b[name];
    }
    return Array.isArray(arr) ? arr : null;
  }
  function seriesValues(d, name, q) {
    if (q === "residual") {
      var m = block(d, "measured", name), f = block(d, "fitted", name);
      if (!m || !f) { return null; }
      var n = Math.min(m.length, f.length), out = new Array(n);
      for (var i = 0; i < n; i++) { out[i] = isNum(m[i]) && isNum(f[i]) ? m[i] - f[i] : null; }
      return out;
    }
    return block(d, q, name);
  }
  function axisOf(d, n) {
    var t = get(d, ["series", "time"]), x = new Array(n);
    var ok = Array.isArray(t) && t.length >= n, i;
    for (i = 0; i < n; i++) { x[i] = ok && isNum(t[i]) ? t[i] : i; }
    for (i = 1; i < n; i++) {
      if (!(x[i] > x[i - 1])) { return x.map(function (_, k) { return k; }); }
    }
    return x;
  }
  function fillSelect(select, options) {
    var previous = select.value;
    clear(select);
    options.forEach(function (o) {
      var opt = el("option", o[1]);
      opt.value = o[0];
      select.appendChild(opt);
    });
    if (options.some(function (o) { return o[0] === previous; })) { select.value = previous; }
  }
  function setupOverlay(A, B) {
    var names = seriesNames(A).slice();
    seriesNames(B).forEach(function (n) { if (names.indexOf(n) < 0) { names.push(n); } });
    fillSelect($("compare-select"), names.map(function (n) { return [n, n]; }));
    var domain = domainOf(A) !== "unknown" ? domainOf(A) : domainOf(B);
    fillSelect($("compare-quantity"), QUANTITIES[domain] || QUANTITIES.identification);
    var legend = $("compare-legend");
    clear(legend);
    ["a", "b"].forEach(function (slot) {
      var item = el("span", null, "legend-item");
      item.appendChild(el("span", null, "swatch swatch-" + slot));
      item.appendChild(document.createTextNode("Run " + slot.toUpperCase() + ": " + files[slot]));
      legend.appendChild(item);
    });
    $("compare-hint").textContent = names.length
      ? "Sample index on the horizontal axis; scroll or drag to zoom, double-click to reset, " +
        "hover to read values."
      : "Neither export holds a series to overlay.";
    drawOverlay(false);
  }
  function drawOverlay(keepView) {
    if (!runs.a || !runs.b) { return; }
    if (!chart) { chart = new window.FigarohChart($("compare-svg"), {xLabel: "sample"}); }
    var name = $("compare-select").value, q = $("compare-quantity").value, series = [];
    var x = [];
    ["a", "b"].forEach(function (slot) {
      var y = seriesValues(runs[slot], name, q);
      if (!y) { return; }
      var ax = axisOf(runs[slot], y.length);
      if (ax.length > x.length) { x = ax; }
      series.push({label: "Run " + slot.toUpperCase(), y: y, x: ax, color: COLORS[slot],
                   width: 1.2, visible: $("compare-toggle-" + slot).checked});
    });
    chart.setData(x, series, "", keepView);
  }

  function update() {
    var ready = !!(runs.a && runs.b);
    show("compat-section", ready);
    if (!ready) {
      show("results-section", false);
      document.body.setAttribute("data-compat", "waiting");
      return;
    }
    var rows = compatRows(runs.a, runs.b);
    var blocking = rows.filter(function (r) { return r.blocks; });
    renderCompat(rows, blocking);
    var forced = $("force-compare").checked;
    show("force-compare-row", blocking.length > 0);
    var visible = blocking.length === 0 || forced;
    show("forced-banner", blocking.length > 0 && forced);
    show("results-section", visible);
    document.body.setAttribute("data-compat",
                               blocking.length ? (forced ? "forced" : "blocked") : "ok");
    if (visible) {
      renderDiff(runs.a, runs.b);
      renderChecks(runs.a, runs.b);
      setupOverlay(runs.a, runs.b);
    }
  }

  function accept(slot, name, text) {
    var data, label = $("filename-" + slot);
    try {
      data = JSON.parse(text);
    } catch (e) {
      return reject(slot, name, "is not valid JSON (" + e.message + ")");
    }
    var problem = validate(data);
    if (problem) { return reject(slot, name, problem); }
    runs[slot] = data;
    files[slot] = name;
    label.textContent = name + " \u2014 " + describe(data);
    label.className = "drop-filename loaded";
    $("force-compare").checked = false;
    update();
  }
  function reject(slot, name, why) {
    runs[slot] = null;
    files[slot] = "";
    var label = $("filename-" + slot);
    label.textContent = name + ": " + why;
    label.className = "drop-filename error";
    update();
  }
  function readFile(slot, file) {
    if (!file) { return; }
    var reader = new FileReader();
    reader.onload = function () { accept(slot, file.name, String(reader.result)); };
    reader.onerror = function () { reject(slot, file.name, "could not be read"); };
    reader.readAsText(file);
  }

  function start() {
    ["a", "b"].forEach(function (slot) {
      var zone = $("zone-" + slot), input = $("file-" + slot);
      input.addEventListener("change", function () {
        readFile(slot, input.files && input.files[0]);
      });
      zone.addEventListener("dragover", function (ev) {
        ev.preventDefault();
        zone.classList.add("drag");
      });
      zone.addEventListener("dragleave", function () { zone.classList.remove("drag"); });
      zone.addEventListener("drop", function (ev) {
        ev.preventDefault();
        zone.classList.remove("drag");
        var list = (ev.dataTransfer && ev.dataTransfer.files) || [];
        if (list.length >= 2) {
          readFile("a", list[0]);
          readFile("b", list[1]);
        } else {
          readFile(slot, list[0]);
        }
      });
    });
    // a file dropped next to the zones must not replace the page
    window.addEventListener("dragover", function (ev) { ev.preventDefault(); });
    window.addEventListener("drop", function (ev) { ev.preventDefault(); });
    $("force-compare").addEventListener("change", update);
    ["compare-toggle-a", "compare-toggle-b", "compare-select", "compare-quantity"]
      .forEach(function (id) {
        $(id).addEventListener("change", function () { drawOverlay(true); });
      });
    $("compare-reset").addEventListener("click", function () { if (chart) { chart.reset(); } });
    window.figarohCompare = {
      load: accept,
      chart: function () { return chart; },
      state: function () { return document.body.getAttribute("data-compat"); }
    };
    document.body.setAttribute("data-compat", "waiting");
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
