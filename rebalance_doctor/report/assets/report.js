// The swimlane timeline of rebalance-doctor's HTML report: plain SVG, no library, no network.
// Data: the JSON in #report-data (report/html.py). Log text is only ever set with textContent.
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var DATA = JSON.parse(document.getElementById("report-data").textContent);
  var LABEL_W = 250, LANE_H = 28, AXIS_H = 26, GEN_H = 14, STRIP_H = 16, PAD = 6, CLUSTER_PX = 8;
  var KINDS = DATA.kinds;                       // marks.toml: label, shape, colour, in drawing priority
  var KIND_ORDER = Object.keys(KINDS);
  var VERDICT_FILL = { harmful: "rgba(211,47,47,0.22)", expected: "rgba(46,125,50,0.20)", unknown: "rgba(96,125,139,0.20)" };
  var SEV_COLOR = { critical: "#c62828", warning: "#b26a00", info: "#1565c0" };
  var SHADE = ["#ffffff", "#f1f4f7"], RING = "#1565c0", CULPRIT = "#c62828", LIFE = "#b0bec5";

  var chart = document.getElementById("chart");
  var legendBox = document.getElementById("legend");
  var tip = document.getElementById("tip");
  var select = document.getElementById("group-select");
  if (!chart || !DATA.groups.length) { return; }

  var state = { group: 0, v0: 0, v1: 1, pinned: false, highlight: null };

  function groupIndex(name) {
    for (var i = 0; i < DATA.groups.length; i++) { if (DATA.groups[i].name === name) { return i; } }
    return -1;
  }

  function wholeWindow() {
    var g = DATA.groups[state.group];
    var span = Math.max(g.span, 1);
    var pad = span * 0.02;
    state.v0 = -pad; state.v1 = span + pad;
  }

  // The first view: from the first rebalance or mark to the last, when they fill less than half
  // of the group's window (quiet hours of logs around an incident); else the whole window.
  function resetView() {
    var g = DATA.groups[state.group];
    var lo = Infinity, hi = -Infinity;
    g.rebalances.forEach(function (r) { lo = Math.min(lo, r.s); hi = Math.max(hi, r.e); });
    g.marks.forEach(function (m) { lo = Math.min(lo, m[1]); hi = Math.max(hi, m[1]); });
    if (lo === Infinity || (hi - lo) > g.span * 0.5) { wholeWindow(); return; }
    var pad = Math.max((hi - lo) * 0.05, 1000);
    state.v0 = lo - pad; state.v1 = hi + pad;
  }

  function el(name, attrs, parent) {
    var node = document.createElementNS(NS, name);
    for (var key in attrs) { if (Object.prototype.hasOwnProperty.call(attrs, key)) { node.setAttribute(key, attrs[key]); } }
    if (parent) { parent.appendChild(node); }
    return node;
  }

  function text(parent, x, y, value, cls, anchor) {
    var t = el("text", { x: x, y: y, "class": cls || "" }, parent);
    if (anchor) { t.setAttribute("text-anchor", anchor); }
    t.textContent = value;
    return t;
  }

  function pad2(n) { return (n < 10 ? "0" : "") + n; }
  function pad3(n) { return (n < 10 ? "00" : n < 100 ? "0" : "") + n; }
  function clock(epochMs, withMs) {
    var d = new Date(epochMs);
    var s = pad2(d.getUTCHours()) + ":" + pad2(d.getUTCMinutes()) + ":" + pad2(d.getUTCSeconds());
    return withMs ? s + "." + pad3(d.getUTCMilliseconds()) : s;
  }
  function stamp(epochMs) {
    var d = new Date(epochMs);
    return d.getUTCFullYear() + "-" + pad2(d.getUTCMonth() + 1) + "-" + pad2(d.getUTCDate()) + " " + clock(epochMs, true) + " UTC";
  }
  function duration(ms) {
    if (ms < 1000) { return ms + " ms"; }
    if (ms < 120000) { return (ms / 1000).toFixed(1) + " s"; }
    if (ms < 7200000) { return (ms / 60000).toFixed(1) + " min"; }
    return (ms / 3600000).toFixed(1) + " h";
  }

  var STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 15000, 30000, 60000, 120000, 300000,
               600000, 900000, 1800000, 3600000, 7200000, 10800000, 21600000, 43200000, 86400000];

  // A label cut in the middle, so that what tells lanes apart (a thread number, a pid) stays.
  function cut(value, n) {
    if (value.length <= n) { return value; }
    var head = Math.ceil((n - 1) / 2), tail = n - 1 - head;
    return value.slice(0, head) + "\u2026" + value.slice(value.length - tail);
  }

  function render() {
    var g = DATA.groups[state.group];
    var width = Math.max(chart.clientWidth, 480);
    var plotW = width - LABEL_W - PAD;
    var stripH = g.findings.some(function (f) { return f.s !== null; }) ? STRIP_H : 0;
    var bandsTop = AXIS_H;
    var lanesTop = AXIS_H + GEN_H + stripH + 2;
    var height = lanesTop + Math.max(g.lanes.length, 1) * LANE_H + PAD;
    var v0 = state.v0, v1 = state.v1, scale = plotW / (v1 - v0);
    function x(ms) { return LABEL_W + (ms - v0) * scale; }

    while (chart.firstChild) { chart.removeChild(chart.firstChild); }
    var svg = el("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height, role: "img",
                          "data-group": g.name }, chart);
    var defs = el("defs", {}, svg);
    var clip = el("clipPath", { id: "plot-clip" }, defs);
    el("rect", { x: LABEL_W, y: 0, width: plotW, height: height }, clip);
    var hatch = el("pattern", { id: "hatch", width: 6, height: 6, patternUnits: "userSpaceOnUse",
                                patternTransform: "rotate(45)" }, defs);
    el("rect", { width: 3, height: 6, fill: "rgba(211,47,47,0.25)" }, hatch);

    // Row labels above the lanes: the generations, the findings' windows.
    var heads = el("g", { "class": "row-heads" }, svg);
    text(heads, 6, AXIS_H + GEN_H - 3, "generation", "lane-host");
    if (stripH) { text(heads, 6, AXIS_H + GEN_H + stripH - 4, "findings", "lane-host"); }

    // Lanes: one per process, shaded per host; the label says host, then thread / worker / client.id.
    var lanes = el("g", { "class": "lanes" }, svg);
    g.lanes.forEach(function (lane, i) {
      var y = lanesTop + i * LANE_H;
      var row = el("g", { "class": "lane lane-" + lane.kind, "data-lane": i, "data-title": lane.title,
                          "data-sub": lane.sub, "data-host": lane.host,
                          "data-culprit": lane.culprit.join(" ") }, lanes);
      el("rect", { x: 0, y: y, width: width, height: LANE_H, fill: SHADE[lane.shade] || SHADE[0] }, row);
      var t = text(row, 8, y + 12, cut(lane.title, 36), lane.culprit.length ? "lane-label culprit-label" : "lane-label");
      el("title", {}, t).textContent = lane.full ? lane.title + " \u2014 " + lane.full : lane.title;
      var s2 = text(row, 8, y + 24, cut(lane.sub, 40), "lane-host");
      el("title", {}, s2).textContent = lane.sub;
      if (lane.culprit.length) {
        // "culprit: <rules>" right of the title where it fits; else "culprit", the rules on hover.
        el("rect", { x: 0, y: y + 1, width: 4, height: LANE_H - 2, fill: CULPRIT }, row);
        var tag = text(row, LABEL_W - 6, y + 12, "culprit: " + lane.culprit.join(", "), "culprit-tag", "end");
        el("title", {}, tag).textContent = "culprit of " + lane.culprit.join(", ");
        var fits = function () { return 8 + t.getComputedTextLength() + 10 + tag.getComputedTextLength() <= LABEL_W - 6; };
        if (!fits()) { tag.firstChild.textContent = "culprit"; }
        for (var n = lane.title.length - 1; !fits() && n > 8; n--) { t.firstChild.textContent = cut(lane.title, n); }
      }
    });
    el("line", { x1: LABEL_W, x2: LABEL_W, y1: 0, y2: height, stroke: "#d8dde3" }, svg);

    var plot = el("g", { "clip-path": "url(#plot-clip)" }, svg);

    // Each lane's life: its own lines about the group, first to last.
    var lives = el("g", { "class": "lives", "pointer-events": "none" }, plot);
    g.lanes.forEach(function (lane, i) {
      if (!lane.life) { return; }
      var cy = lanesTop + i * LANE_H + LANE_H / 2;
      el("line", { x1: x(lane.life[0]), x2: Math.max(x(lane.life[1]), x(lane.life[0]) + 1), y1: cy, y2: cy,
                   stroke: LIFE, "stroke-width": 2, "class": "life", "data-lane": i }, lives);
    });

    // Rebalance bands, from the start to the last member's assignment, coloured by verdict.
    var bands = el("g", { "class": "bands" }, plot);
    var lastLabelX = -1e9;
    g.rebalances.forEach(function (r) {
      var x0 = x(r.s), x1 = Math.max(x(r.e), x0 + 2);
      if (x1 < LABEL_W - 2 || x0 > width) { return; }
      var failed = r.o === "failed";
      var band = el("rect", { x: x0, y: bandsTop, width: x1 - x0, height: height - bandsTop - PAD,
                              fill: failed ? "url(#hatch)" : (VERDICT_FILL[r.v] || VERDICT_FILL.unknown),
                              stroke: failed ? "#d32f2f" : (state.highlight === r.i ? "#1565c0" : "none"),
                              "stroke-width": state.highlight === r.i ? 2 : 1,
                              "class": "band", "data-index": r.i, "data-generation": r.g === null ? "" : r.g,
                              "data-verdict": r.v, "data-outcome": r.o }, bands);
      band.addEventListener("mouseenter", function (ev) { showTip(ev, bandTip(g, r)); });
      band.addEventListener("mouseleave", hideTip);
      band.addEventListener("click", function (ev) { ev.stopPropagation(); pin(ev, bandTip(g, r)); });
      var label = r.g === null ? "?" : "g" + r.g;
      var lx = (x0 + x1) / 2;
      if (lx - lastLabelX > label.length * 6 + 6) {
        text(bands, lx, AXIS_H + GEN_H - 3, label, "gen", "middle");
        lastLabelX = lx;
      }
    });

    // Findings: their windows as a row of their own above the lanes, coloured by severity.
    var strip = el("g", { "class": "finding-strip" }, plot);
    g.findings.forEach(function (f, k) {
      if (f.s === null) { return; }
      var x0 = x(f.s), x1 = Math.max(x(f.e === null ? f.s : f.e), x0 + 4);
      var y = AXIS_H + GEN_H + 2;
      var bar = el("rect", { x: x0, y: y, width: x1 - x0, height: stripH - 4, rx: 2, fill: SEV_COLOR[f.sev] || "#999",
                             "class": "finding-bar", "data-rule": f.rule }, strip);
      bar.addEventListener("mouseenter", function (ev) {
        showTip(ev, simpleTip(f.sev + " " + f.rule, f.title + (f.culprit ? " \u2014 culprit: " + f.culprit : "")));
      });
      bar.addEventListener("mouseleave", hideTip);
      if (x1 - x0 > f.rule.length * 6 + 8) { text(strip, x0 + 4, y + stripH - 8, f.rule, "finding-label"); }
      else if (x1 + 4 + f.rule.length * 6 < width) { text(strip, x1 + 3, y + stripH - 8, f.rule, "finding-label-out"); }
    });

    // Marks, clustered where they would overlap at this zoom.
    var marks = el("g", { "class": "marks" }, plot);
    var open = {};
    var clusters = [];
    g.marks.forEach(function (m) {
      var px = x(m[1]);
      if (px < LABEL_W - CLUSTER_PX || px > width + CLUSTER_PX) { return; }
      var c = open[m[0]];
      if (c && px - c.x0 < CLUSTER_PX) {
        c.count += m[3]; c.kinds[m[2]] = (c.kinds[m[2]] || 0) + m[3]; c.end = m[1];
        m[4].forEach(function (s) { if (c.samples.length < 12) { c.samples.push(s); } });
        m[5].forEach(function (n) { c.names[n] = true; });
        m[6].forEach(function (n) { c.rules[n] = true; });
        if (m[7]) { c.via[m[7]] = true; }
        return;
      }
      c = { lane: m[0], x0: px, start: m[1], end: m[1], count: m[3], kinds: {}, samples: m[4].slice(0, 12), names: {},
            rules: {}, via: {} };
      c.kinds[m[2]] = m[3];
      m[5].forEach(function (n) { c.names[n] = true; });
      m[6].forEach(function (n) { c.rules[n] = true; });
      if (m[7]) { c.via[m[7]] = true; }
      open[m[0]] = c;
      clusters.push(c);
    });
    var nextX = {};  // the next cluster's x in the same lane: a count is drawn only where it fits
    for (var n = clusters.length - 1; n >= 0; n--) {
      clusters[n].room = (nextX[clusters[n].lane] === undefined ? Infinity : nextX[clusters[n].lane]) - clusters[n].x0;
      nextX[clusters[n].lane] = clusters[n].x0;
    }
    clusters.forEach(function (c) {
      var kind = KIND_ORDER.filter(function (k) { return c.kinds[k]; })[0];
      var cx = c.x0, cy = lanesTop + c.lane * LANE_H + LANE_H / 2;
      var ringed = Object.keys(c.rules).length > 0, via = Object.keys(c.via).length > 0;
      var node = el("g", { "class": "mark", "data-kind": kind, "data-count": c.count, "data-lane": c.lane,
                           "data-rules": Object.keys(c.rules).join(" "), "data-via": Object.keys(c.via).join(" "),
                           transform: "translate(" + cx.toFixed(1) + "," + cy + ")" }, marks);
      shape(node, kind, ringed, via);
      if (c.count > 1 && c.room > 8 + 6 * String(c.count).length) { text(node, 7, -5, String(c.count), "count"); }
      node.addEventListener("mouseenter", function (ev) { showTip(ev, markTip(g, c)); });
      node.addEventListener("mouseleave", hideTip);
      node.addEventListener("click", function (ev) { ev.stopPropagation(); pin(ev, markTip(g, c)); });
    });

    // The time axis (UTC).
    var axis = el("g", { "class": "axis", "pointer-events": "none" }, svg);  // grid lines never hide a mark
    el("rect", { x: 0, y: 0, width: width, height: AXIS_H, fill: "#f6f8fa" }, axis);
    var want = (v1 - v0) / Math.max(plotW / 110, 2);
    var step = STEPS.filter(function (s) { return s >= want; })[0] || 86400000;
    var t0 = g.t0;
    var first = Math.ceil((t0 + v0) / step) * step;
    for (var t = first; t <= t0 + v1; t += step) {
      var px = x(t - t0);
      if (px < LABEL_W) { continue; }
      el("line", { x1: px, x2: px, y1: AXIS_H - 5, y2: AXIS_H, stroke: "#b0bec5" }, axis);
      text(axis, px, 16, clock(t, step < 1000), "", "middle");
    }
    text(axis, 6, 16, stamp(t0 + Math.max(v0, 0)).slice(0, 10) + " UTC", "lane-host");
  }

  // A mark's shape (marks.toml `shape`), ringed when a finding names its line, dotted when the coordinator logged it.
  function shape(node, kind, ringed, via) {
    var spec = KINDS[kind] || { shape: "cross", color: "#455a64" };
    var color = spec.color;
    switch (spec.shape) {
      case "triangle-up": el("path", { d: "M0,-6 L5,4 L-5,4 Z", fill: color }, node); break;
      case "triangle-down": el("path", { d: "M0,6 L5,-4 L-5,-4 Z", fill: color }, node); break;
      case "diamond": el("path", { d: "M0,-7 L7,0 L0,7 L-7,0 Z", fill: color }, node); break;
      case "square": el("rect", { x: -5, y: -5, width: 10, height: 10, fill: color }, node); break;
      case "square-open": el("rect", { x: -4, y: -4, width: 8, height: 8, fill: "#fff", stroke: color, "stroke-width": 2 }, node); break;
      case "hourglass": el("path", { d: "M-5,-7 L5,-7 L-5,7 L5,7 Z", fill: color, stroke: color, "stroke-width": 1, "stroke-linejoin": "round" }, node); break;
      case "skull":
        el("circle", { r: 7, fill: color }, node);
        el("path", { d: "M-3,-3 L3,3 M3,-3 L-3,3", stroke: "#fff", "stroke-width": 2 }, node); break;
      case "plus": el("path", { d: "M0,-6 L0,6 M-6,0 L6,0", stroke: color, "stroke-width": 3 }, node); break;
      case "circle-open": el("circle", { r: 5, fill: "#fff", stroke: color, "stroke-width": 2 }, node); break;
      case "dot": el("circle", { r: 3, fill: color }, node); break;
      default: el("path", { d: "M-5,-5 L5,5 M5,-5 L-5,5", stroke: color, "stroke-width": 2.5 }, node);
    }
    if (via) { el("circle", { r: 2, fill: "#fff" }, node); }
    if (ringed) { el("circle", { r: 10, fill: "none", stroke: RING, "stroke-width": 2, "class": "ring" }, node); }
    el("circle", { r: 10, fill: "transparent" }, node);  // an easier target
  }

  // The legend of the group shown: what each colour, shape and line drawn means (report/lanes.py).
  function drawLegend(g) {
    if (!legendBox) { return; }
    while (legendBox.firstChild) { legendBox.removeChild(legendBox.firstChild); }
    g.legend.forEach(function (item) {
      var what = item[0], id = item[1];
      var entry = document.createElement("div");
      entry.className = "entry"; entry.setAttribute("data-legend", what + ":" + id);
      var sw = el("svg", { width: 26, height: 18, viewBox: "-13 -9 26 18", "class": "swatch" });
      if (what === "band") {
        el("rect", { x: -10, y: -7, width: 20, height: 14, fill: id === "failed" ? "url(#legend-hatch)" : VERDICT_FILL[id],
                     stroke: id === "failed" ? "#d32f2f" : "none" }, sw);
        if (id === "failed") {
          var d = el("defs", {}, sw);
          var h = el("pattern", { id: "legend-hatch", width: 6, height: 6, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" }, d);
          el("rect", { width: 3, height: 6, fill: "rgba(211,47,47,0.25)" }, h);
        }
      } else if (what === "mark") { shape(sw, id, false, false); }
      else if (what === "ring") { shape(sw, "session-expired", true, false); }
      else if (what === "via") { shape(sw, "session-expired", false, true); }
      else if (what === "line" && id === "life") { el("line", { x1: -11, x2: 11, y1: 0, y2: 0, stroke: LIFE, "stroke-width": 2 }, sw); }
      else if (what === "line" && id === "shade") {
        el("rect", { x: -11, y: -8, width: 22, height: 8, fill: SHADE[0], stroke: "#d8dde3" }, sw);
        el("rect", { x: -11, y: 0, width: 22, height: 8, fill: SHADE[1], stroke: "#d8dde3" }, sw);
      } else if (what === "culprit") {
        el("rect", { x: -11, y: -8, width: 4, height: 16, fill: CULPRIT }, sw);
        var c = el("text", { x: -4, y: 4, "class": "culprit-label" }, sw); c.textContent = "abc";
      } else if (what === "finding") { el("rect", { x: -11, y: -4, width: 22, height: 8, rx: 2, fill: SEV_COLOR[id] }, sw); }
      entry.appendChild(sw);
      var label = document.createElement("span"); label.textContent = item[2];
      entry.appendChild(label);
      legendBox.appendChild(entry);
    });
  }

  // ---------------------------------------------------------------- tooltips (text only)
  function div(cls, value) { var d = document.createElement("div"); if (cls) { d.className = cls; } if (value !== undefined) { d.textContent = value; } return d; }
  function evidenceNode(id) {
    var line = DATA.evidence[id];
    var d = div("ev");
    if (!line) { return d; }
    var ref = document.createElement("code"); ref.textContent = line[0];
    var msg = document.createElement("span"); msg.className = "logline"; msg.textContent = " " + line[1];
    d.appendChild(ref); d.appendChild(msg);
    return d;
  }
  function simpleTip(title, body) {
    var box = div(); box.appendChild(div("title", title)); box.appendChild(div("", body)); return box;
  }
  function bandTip(g, r) {
    var box = div();
    var gen = (r.og === null ? "?" : r.og) + " \u2192 " + (r.g === null ? "?" : r.g);
    box.appendChild(div("title", "rebalance #" + r.i + ": generation " + gen + " (" + r.o + (r.fu ? ", followup " + r.fu : "") + ")"));
    box.appendChild(div("", stamp(g.t0 + r.s) + ", took " + duration(r.e - r.s)));
    var verdict = r.v === "unknown" ? "not classified" : r.v;
    box.appendChild(div("", "verdict: " + verdict + (r.op ? "; operation: " + r.op : "") + (r.p && r.p !== "unknown" ? "; protocol: " + r.p : "")));
    box.appendChild(div("", "trigger: " + (r.k || "unknown") + (r.by ? " by " + r.by : "")));
    if (r.tr) { box.appendChild(div("", "reason: " + r.tr)); }
    if (r.f) { box.appendChild(div("", "failure: " + r.f)); }
    box.appendChild(div("", "leader: " + (r.leader || "not logged") + "; members: " + (r.m === null ? "?" : r.m) + (r.n ? " (" + r.n + " nodes)" : "")));
    if (r.left.length) { box.appendChild(div("", "left: " + r.left.join(", "))); }
    if (r.expired.length) { box.appendChild(div("", "expired: " + r.expired.join(", "))); }
    if (r.missed.length) { box.appendChild(div("", "missed: " + r.missed.join(", "))); }
    if (r.ev !== null) { box.appendChild(evidenceNode(r.ev)); }
    return box;
  }
  function markTip(g, c) {
    var box = div();
    var lane = g.lanes[c.lane];
    var kinds = KIND_ORDER.filter(function (k) { return c.kinds[k]; }).map(function (k) { return c.kinds[k] + " " + KINDS[k].label; });
    box.appendChild(div("title", kinds.join(", ") + " \u2014 " + (lane.kind === "coordinator" ? "coordinator on " + lane.host : lane.title + " " + lane.sub)));
    var when = stamp(g.t0 + c.start) + (c.end !== c.start ? " .. " + clock(g.t0 + c.end, true) : "");
    box.appendChild(div("", when + "; events: " + Object.keys(c.names).join(", ")));
    if (Object.keys(c.via).length) { box.appendChild(div("", "logged by the coordinator about this member")); }
    if (Object.keys(c.rules).length) { box.appendChild(div("", "evidence of: " + Object.keys(c.rules).join(", "))); }
    c.samples.forEach(function (id) { box.appendChild(evidenceNode(id)); });
    if (c.count > c.samples.length) { box.appendChild(div("", (c.count - c.samples.length) + " more line(s) not shown: zoom in, or see the events table")); }
    return box;
  }
  function place(ev) {
    var pad = 14, w = tip.offsetWidth, h = tip.offsetHeight;
    var left = ev.clientX + pad, top = ev.clientY + pad;
    if (left + w > window.innerWidth - 8) { left = Math.max(8, ev.clientX - w - pad); }
    if (top + h > window.innerHeight - 8) { top = Math.max(8, ev.clientY - h - pad); }
    tip.style.left = left + "px"; tip.style.top = top + "px";
  }
  function showTip(ev, content) {
    if (state.pinned) { return; }
    while (tip.firstChild) { tip.removeChild(tip.firstChild); }
    tip.appendChild(content); tip.hidden = false; tip.classList.remove("pinned"); place(ev);
  }
  function hideTip() { if (!state.pinned) { tip.hidden = true; } }
  function pin(ev, content) {
    state.pinned = false; showTip(ev, content); state.pinned = true; tip.classList.add("pinned");
  }
  function unpin() { state.pinned = false; tip.hidden = true; tip.classList.remove("pinned"); }

  // ---------------------------------------------------------------- zoom, pan, selection
  function zoom(factor, atMs) {
    var g = DATA.groups[state.group];
    var span = state.v1 - state.v0;
    var next = Math.min(Math.max(span * factor, 20), Math.max(g.span, 1) * 1.5 + 1000);
    var at = atMs === undefined ? (state.v0 + state.v1) / 2 : atMs;
    var share = (at - state.v0) / span;
    state.v0 = at - share * next; state.v1 = state.v0 + next;
    render();
  }
  function msAt(clientX) {
    var rect = chart.getBoundingClientRect();
    var plotW = Math.max(chart.clientWidth, 480) - LABEL_W - PAD;
    return state.v0 + (clientX - rect.left - LABEL_W) / plotW * (state.v1 - state.v0);
  }
  chart.addEventListener("wheel", function (ev) {
    ev.preventDefault();
    zoom(ev.deltaY < 0 ? 1 / 1.3 : 1.3, msAt(ev.clientX));
  }, { passive: false });
  var drag = null;
  chart.addEventListener("mousedown", function (ev) {
    drag = { x: ev.clientX, v0: state.v0, v1: state.v1, moved: false };
  });
  window.addEventListener("mousemove", function (ev) {
    if (!drag) { return; }
    var dx = ev.clientX - drag.x;
    if (Math.abs(dx) > 3) { drag.moved = true; chart.classList.add("dragging"); }
    if (!drag.moved) { return; }
    var plotW = Math.max(chart.clientWidth, 480) - LABEL_W - PAD;
    var shift = dx / plotW * (drag.v1 - drag.v0);
    state.v0 = drag.v0 - shift; state.v1 = drag.v1 - shift;
    render();
  });
  window.addEventListener("mouseup", function () { drag = null; chart.classList.remove("dragging"); });
  chart.addEventListener("dblclick", function () { wholeWindow(); render(); });
  document.addEventListener("click", function (ev) { if (state.pinned && !tip.contains(ev.target)) { unpin(); } });
  document.addEventListener("keydown", function (ev) {
    if (ev.target && (ev.target.tagName === "SELECT" || ev.target.tagName === "INPUT")) { return; }
    if (ev.key === "Escape") { unpin(); }
    else if (ev.key === "+" || ev.key === "=") { zoom(1 / 1.5); }
    else if (ev.key === "-") { zoom(1.5); }
    else if (ev.key === "0") { wholeWindow(); render(); }
  });
  document.getElementById("zoom-in").addEventListener("click", function (ev) { ev.stopPropagation(); zoom(1 / 1.5); });
  document.getElementById("zoom-out").addEventListener("click", function (ev) { ev.stopPropagation(); zoom(1.5); });
  document.getElementById("zoom-reset").addEventListener("click", function (ev) { ev.stopPropagation(); wholeWindow(); render(); });

  function showGroup(name, scroll) {
    var i = groupIndex(name);
    if (i < 0) { return; }
    state.group = i; state.highlight = null; select.value = name; unpin(); resetView(); render(); drawLegend(DATA.groups[i]);
    if (scroll) { document.getElementById("timeline").scrollIntoView(); }
  }
  select.addEventListener("change", function () { showGroup(select.value, false); });
  Array.prototype.forEach.call(document.querySelectorAll("a[data-group]"), function (a) {
    a.addEventListener("click", function () { showGroup(a.getAttribute("data-group"), false); });
  });
  Array.prototype.forEach.call(document.querySelectorAll("tr.rb"), function (row) {
    row.addEventListener("click", function () {
      showGroup(row.getAttribute("data-group"), true);
      var g = DATA.groups[state.group], index = Number(row.getAttribute("data-index"));
      var r = g.rebalances.filter(function (x) { return x.i === index; })[0];
      if (!r) { return; }
      var span = Math.max(r.e - r.s, 200);
      state.v0 = r.s - span * 1.5; state.v1 = r.e + span * 1.5; state.highlight = r.i;
      render();
    });
  });
  var resizing = null;
  window.addEventListener("resize", function () { clearTimeout(resizing); resizing = setTimeout(render, 100); });

  showGroup(DATA["default"] !== null && groupIndex(DATA["default"]) >= 0 ? DATA["default"] : DATA.groups[0].name, false);
})();
