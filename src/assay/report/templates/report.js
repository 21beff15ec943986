// The sample browser of the assay report. Every value from a run is untrusted: the DOM is built with
// createElement and textContent only, never from HTML strings.
(function () {
  "use strict";

  var DATA = JSON.parse(document.getElementById("assay-data").textContent);
  var SAMPLES = DATA.samples;
  var TASKS = DATA.tasks;
  var METRICS = DATA.metrics;
  var RUNS = DATA.runs;
  var PAGE_SIZE = 50;
  var LIST_CHARS = 160;

  var state = { run: "", task: "", metric: "", status: "", q: "", sort: "", page: 0, theme: null };
  var view = [];
  var searchText = null;

  // ---- small DOM helpers (text only) ---------------------------------------------------------------
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function add(parent) {
    for (var i = 1; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined) continue;
      parent.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return parent;
  }
  function byId(id) { return document.getElementById(id); }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function option(value, label) {
    var o = document.createElement("option");
    o.value = String(value);
    o.textContent = label;
    return o;
  }

  // ---- values ------------------------------------------------------------------------------------
  // A capped text is [text, original length]; anything else is shown as is.
  function textOf(v) {
    if (v === null || v === undefined) return "";
    if (Array.isArray(v) && v.length === 2 && typeof v[0] === "string" && typeof v[1] === "number") return v[0];
    return typeof v === "string" ? v : JSON.stringify(v);
  }
  function cappedAt(v) {
    return Array.isArray(v) && v.length === 2 && typeof v[0] === "string" && typeof v[1] === "number" ? v[1] : 0;
  }
  function short(s) {
    s = s.replace(/\s+/g, " ").trim();
    return s.length > LIST_CHARS ? s.slice(0, LIST_CHARS) + "…" : s;
  }
  function fmtScore(x) {
    if (x === null || x === undefined) return "—";
    return Number.isInteger(x) ? String(x) : x.toFixed(3);
  }
  function fmtSeconds(x) {
    if (x === null || x === undefined) return "—";
    return x < 1 ? (x * 1000).toFixed(0) + " ms" : x.toFixed(2) + " s";
  }
  function metricLabel(m) { return m.f === "none" ? m.m : m.m + " · " + m.f; }
  function sampleKey(s) { return TASKS[s.t] + "\u0000" + s.i; }
  function sampleHref(s) {
    var h = "#sample=" + encodeURIComponent(TASKS[s.t]) + "/" + encodeURIComponent(s.i);
    return RUNS.length > 1 ? h + "&run=" + s.r : h;
  }
  function outputText(s) {
    var parts = [];
    (s.o || []).forEach(function (r) { if (r && r.x) parts.push(textOf(r.x)); });
    return parts.join(" ‖ ");
  }
  function latencyOf(s) {
    var total = 0, any = false;
    (s.o || []).forEach(function (r) { if (r && typeof r.l === "number") { total += r.l; any = true; } });
    return any ? total : null;
  }

  // Outcome of one sample: for one metric its own verdict, for all metrics pass only if every metric passed.
  function outcome(s, metric) {
    var fail = false, error = false, pass = false;
    var modelError = (s.o || []).some(function (r) { return r && r.e; });
    (s.v || []).forEach(function (v) {
      if (metric !== "" && v[0] !== metric) return;
      if (v[2] === 1) pass = true;
      else if (v[2] === 0) fail = true;
      else error = true;
    });
    if (metric === "" && modelError) error = true;
    if (!fail && !error && !pass) error = true;
    return { pass: pass && !fail && !error, fail: fail, error: error };
  }
  function scoreOf(s, metric) {
    var sum = 0, n = 0;
    (s.v || []).forEach(function (v) {
      if ((metric === "" || v[0] === metric) && v[1] !== null && v[1] !== undefined) { sum += v[1]; n++; }
    });
    return n ? sum / n : null;
  }
  function haystack(i) {
    if (searchText === null) {
      searchText = new Array(SAMPLES.length);
      for (var k = 0; k < SAMPLES.length; k++) {
        var s = SAMPLES[k];
        var bits = [s.i, textOf(s.n), textOf(s.p), textOf(s.g), outputText(s)];
        (s.v || []).forEach(function (v) {
          (v[3] || []).forEach(function (d) { bits.push(d[2] || "", d[3] || "", d[4] || ""); });
        });
        (s.o || []).forEach(function (r) { if (r && r.e) bits.push(r.e); });
        searchText[k] = bits.join("\n").toLowerCase();
      }
    }
    return searchText[i];
  }

  // ---- filtering and the table -----------------------------------------------------------------------
  function compute() {
    var run = state.run === "" ? -1 : Number(state.run);
    var task = state.task === "" ? -1 : Number(state.task);
    var metric = state.metric === "" ? "" : Number(state.metric);
    var q = state.q.trim().toLowerCase();
    var members = state.theme ? state.theme.members : null;
    var out = [];
    for (var i = 0; i < SAMPLES.length; i++) {
      var s = SAMPLES[i];
      if (run >= 0 && s.r !== run) continue;
      if (task >= 0 && s.t !== task) continue;
      if (members && !members.has(i)) continue;
      if (metric !== "" && !(s.v || []).some(function (v) { return v[0] === metric; })) continue;
      if (state.status) {
        var oc = outcome(s, metric);
        if (!oc[state.status]) continue;
      }
      if (q && haystack(i).indexOf(q) < 0) continue;
      out.push(i);
    }
    if (state.sort) {
      var sign = state.sort === "asc" ? 1 : -1;
      var keyed = out.map(function (i) { return [scoreOf(SAMPLES[i], metric), i]; });
      keyed.sort(function (a, b) {
        if (a[0] === null && b[0] === null) return a[1] - b[1];
        if (a[0] === null) return 1;
        if (b[0] === null) return -1;
        return (a[0] - b[0]) * sign || a[1] - b[1];
      });
      out = keyed.map(function (k) { return k[1]; });
    }
    view = out;
  }

  function badges(oc) {
    var span = el("span");
    if (oc.fail) add(span, el("span", "badge fail", "✗ fail"));
    if (oc.error) add(span, el("span", "badge error", "⚠ error"));
    if (!oc.fail && !oc.error) add(span, el("span", "badge pass", "✓ pass"));
    return span;
  }

  function renderTable() {
    var body = byId("sample-rows");
    clear(body);
    var metric = state.metric === "" ? "" : Number(state.metric);
    var pages = Math.max(1, Math.ceil(view.length / PAGE_SIZE));
    if (state.page >= pages) state.page = pages - 1;
    var start = state.page * PAGE_SIZE;
    var rows = view.slice(start, start + PAGE_SIZE);
    rows.forEach(function (idx) {
      var s = SAMPLES[idx];
      var tr = el("tr");
      tr.dataset.index = String(idx);
      var link = el("a", null, s.i);
      link.setAttribute("href", sampleHref(s));
      var sidCell = add(el("td", "sid"), link);
      if (RUNS.length > 1) add(sidCell, add(el("div", "sub run-tag"), el("span", "swatch " + RUNS[s.r].css), RUNS[s.r].label));
      add(tr,
        el("td", null, TASKS[s.t]),
        sidCell,
        el("td", "text", short(textOf(s.n !== undefined ? s.n : s.p))),
        add(el("td", "text", short(outputText(s) || ((s.o || []).some(function (r) { return r && r.e; }) ? "(no response)" : ""))),
          agentNote(s)),
        el("td", "text", short(textOf(s.g))),
        el("td", "num", fmtScore(scoreOf(s, metric))),
        add(el("td", "outcome"), badges(outcome(s, metric))),
        el("td", "num", fmtSeconds(latencyOf(s))));
      tr.addEventListener("click", function (ev) {
        if (ev.target.tagName !== "A") location.hash = sampleHref(s).slice(1);
      });
      body.appendChild(tr);
    });
    if (!rows.length) {
      var td = el("td", "empty", "No sample matches these filters.");
      td.colSpan = 8;
      add(body, add(el("tr"), td));
    }
    var count = byId("sample-count");
    count.textContent = String(view.length);
    count.dataset.count = String(view.length);
    byId("p-info").textContent = "page " + (state.page + 1) + " of " + pages;
    byId("p-prev").disabled = state.page === 0;
    byId("p-next").disabled = state.page >= pages - 1;
  }

  function refresh() {
    byId("score-head").textContent = state.metric === "" ? "Mean score" : "Score";
    compute();
    renderTable();
  }

  function renderThemeChip() {
    var holder = byId("f-theme");
    clear(holder);
    if (!state.theme) return;
    var chip = el("span", "chip", "theme: " + state.theme.label);
    var x = el("button", null, "×");
    x.type = "button";
    x.setAttribute("aria-label", "clear theme filter");
    x.addEventListener("click", function () { state.theme = null; state.page = 0; renderThemeChip(); refresh(); });
    holder.appendChild(add(chip, x));
  }

  function setupControls() {
    var runSel = byId("f-run");
    if (runSel) {
      runSel.appendChild(option("", "all runs"));
      RUNS.forEach(function (r, i) { runSel.appendChild(option(i, r.label)); });
    }
    var taskSel = byId("f-task");
    taskSel.appendChild(option("", "all tasks"));
    TASKS.forEach(function (t, i) { taskSel.appendChild(option(i, t)); });
    var metricSel = byId("f-metric");
    metricSel.appendChild(option("", "all evaluators"));
    METRICS.forEach(function (m, i) { metricSel.appendChild(option(i, metricLabel(m))); });
    var bind = function (id, key, evName) {
      var node = byId(id);
      if (!node) return;
      node.addEventListener(evName || "change", function () { state[key] = node.value; state.page = 0; refresh(); });
    };
    bind("f-run", "run");
    bind("f-task", "task");
    bind("f-metric", "metric");
    bind("f-status", "status");
    bind("f-sort", "sort");
    var timer = null;
    var search = byId("f-q");
    search.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () { state.q = search.value; state.page = 0; refresh(); }, 150);
    });
    byId("p-prev").addEventListener("click", function () { state.page--; renderTable(); });
    byId("p-next").addEventListener("click", function () { state.page++; renderTable(); });
  }

  // ---- the detail panel -------------------------------------------------------------------------------
  // Samples by (task, id) for deep links, and by (task, doc_id) to show one dataset row across runs.
  var index = {};
  var byDoc = {};
  SAMPLES.forEach(function (s, i) {
    var k = sampleKey(s);
    (index[k] = index[k] || []).push(i);
    var d = TASKS[s.t] + "\u0000" + s.d;
    (byDoc[d] = byDoc[d] || []).push(i);
  });

  function field(label, value, cap) {
    var box = add(el("div", "field"), el("div", "label", label), el("pre", "text", value));
    if (cap) add(box, el("div", "truncated", "Truncated: " + cap.toLocaleString() + " characters in the run; the first " +
      DATA.cap.toLocaleString() + " are shown. The full text is in samples.jsonl."));
    return box;
  }
  function textField(label, v) { return field(label, textOf(v), cappedAt(v)); }
  // The sample's input (its dataset field) and the prompt the model saw; one field when they are the same.
  function addPrompt(parent, s) {
    if (s.n === undefined) return add(parent, textField("Input / prompt", s.p));
    return add(parent, textField("Input", s.n), textField("Prompt", s.p));
  }

  // A verdict's own checks (a promptfoo test's assertions, as row_checks records them), one row each with its
  // pass, score, reason and named metric; an assert-set's checks indented under it. Text nodes only.
  function assertionsTable(list) {
    var table = el("table", "assertions");
    add(table, add(el("thead"), add(el("tr"), el("th", null, "Assertion"), el("th", null, "Outcome"),
      el("th", "num", "Score"), el("th", null, "Reason"), el("th", null, "Metric"))));
    var body = el("tbody");
    var addRows = function (items, depth) {
      items.forEach(function (a) {
        var passed = a[1], kind = passed === 1 ? "pass" : passed === 0 ? "fail" : "unknown";
        var tr = el("tr", "assertion " + kind);
        tr.dataset.depth = String(depth);
        var type = el("td", "mono atype", (depth ? "\u00a0\u00a0".repeat(depth - 1) + "↳ " : "") + a[0]);
        if (a[5] !== undefined && a[5] !== null) add(type, el("span", "sub", " weight " + fmtScore(a[5])));
        add(tr, type,
          add(el("td", "aoutcome"), kind === "unknown" ? el("span", "sub", "—") :
            el("span", "badge " + kind, kind === "pass" ? "✓ pass" : "✗ fail")),
          el("td", "num ascore", fmtScore(a[2] === undefined ? null : a[2])),
          el("td", "text areason", a[3] || ""),
          el("td", "mono ametric", a[4] || ""));
        add(body, tr);
        if (a[6]) addRows(a[6], depth + 1);
      });
    };
    addRows(list, 0);
    return add(table, body);
  }

  function verdictBox(metricIdx, d, repeat, repeats) {
    var score = d[0], passed = d[1], reason = d[2], feedback = d[3], error = d[4], details = d[5], checks = d[6];
    var kind = error ? "error" : passed ? "pass" : "fail";
    var box = el("div", "verdict " + kind);
    var head = add(el("div", "vhead"),
      el("b", null, metricLabel(METRICS[metricIdx])),
      repeats > 1 ? el("span", "sub", "repeat " + (repeat + 1)) : null,
      el("span", "badge " + kind, kind === "pass" ? "✓ passed" : kind === "fail" ? "✗ failed" : "⚠ error"),
      el("span", "mono", "score " + fmtScore(score === undefined ? null : score)));
    add(box, head);
    var body = el("div", "vbody");
    if (error) add(body, add(el("div"), el("span", "k", "error: "), error));
    if (reason) add(body, add(el("div"), el("span", "k", "reason: "), reason));
    if (feedback) add(body, add(el("div"), el("span", "k", "feedback: "), feedback));
    if (checks && checks.length) add(body, add(el("div", "table-scroll"), assertionsTable(checks)));
    if (details) {
      var det = add(el("details"), el("summary", null, "details"), el("pre", "text", details));
      add(body, det);
    }
    if (body.firstChild) add(box, body);
    return box;
  }

  function responseBox(r, i, repeats) {
    var box = el("div", "field");
    var meta = [];
    if (typeof r.l === "number") meta.push("latency " + fmtSeconds(r.l));
    if (r.u) meta.push("tokens " + r.u[0] + " in / " + r.u[1] + " out");
    if (r.k) meta.push("cached");
    if (r.f) meta.push("finish: " + r.f);
    if (r.m) meta.push("model: " + r.m);
    add(box, el("div", "label", repeats > 1 ? "Output, repeat " + (i + 1) : "Output"));
    if (r.e) add(box, add(el("div", "verdict error"), el("span", "badge error", "⚠ model error"), " ", r.e));
    if (r.x !== undefined && r.x !== null) {
      add(box, el("pre", "text", textOf(r.x)));
      var cap = cappedAt(r.x);
      if (cap) add(box, el("div", "truncated", "Truncated: " + cap.toLocaleString() + " characters in the run."));
    } else if (!r.e) {
      add(box, el("pre", "text sub", "(no text)"));
    }
    if (r.rz !== undefined) add(box, reasoningBox("Reasoning taken out before scoring", r.rz));
    if (r.rs !== undefined) add(box, reasoningBox("Reasoning returned apart by the server (not scored)", r.rs));
    if (r.h) add(box, transcriptBox(r.h, r.s));
    else (r.c || []).forEach(function (call) {
      var tool = add(el("div", "tool"), el("span", "k", "tool call "), el("b", "mono", call[0]), " ", el("code", null, call[1] || "{}"));
      if (call.length > 2 && call[2] !== null) add(tool, add(el("div"), el("span", "k", "→ "), el("code", null, call[2])));
      add(box, tool);
    });
    if (r.wd !== undefined) add(box, reasoningBox("Workspace diff: what the agent changed in its environment", r.wd));
    if (meta.length) add(box, el("div", "sub", meta.join(" · ")));
    return box;
  }

  // A reasoning model's reasoning, folded under its output: what was taken out of the reply's text before the
  // filters and evaluators saw it, or what the server returned apart from the text. Text nodes only.
  function reasoningBox(label, v) {
    var box = add(el("details", "reasoning"), el("summary", null, label), el("pre", "text", textOf(v)));
    var cap = cappedAt(v);
    if (cap) add(box, el("div", "truncated", "Truncated: " + cap.toLocaleString() + " characters in the run."));
    return box;
  }

  // "2 turns · 3 tool calls" under an agent sample's output in the list (turns: the model's calls).
  function agentNote(s) {
    var h = ((s.o || [])[0] || {}).h;
    if (!h) return null;
    var turns = h.filter(function (m) { return m[0] === "assistant"; }).length;
    var calls = h.filter(function (m) { return m[0] === "tool"; }).length;
    return el("div", "sub agent-note", turns + " turn" + (turns === 1 ? "" : "s") + " · " + calls + " tool call" + (calls === 1 ? "" : "s"));
  }

  // An agent's transcript as a conversation: each message with its role, tool calls folded with their arguments,
  // tool results (errors marked), per-call latency and tokens. Everything is text nodes: outputs are untrusted.
  function transcriptBox(h, stop) {
    var turns = h.filter(function (m) { return m[0] === "user"; }).length;
    var calls = h.filter(function (m) { return m[0] === "tool"; }).length;
    var box = add(el("details", "transcript"), el("summary", null,
      "Transcript: " + h.length + " messages, " + turns + " user turn" + (turns === 1 ? "" : "s") + ", " +
      calls + " tool call" + (calls === 1 ? "" : "s") + (stop ? " · stopped: " + stop : "")));
    box.open = true;
    h.forEach(function (m) {
      var role = m[0], text = m[1], meta = [];
      if (typeof m[3] === "number") meta.push(fmtSeconds(m[3]));
      if (m[4]) meta.push(m[4][0] + " in / " + m[4][1] + " out");
      var msg = add(el("div", "msg " + role + (m[5] ? " error" : "")),
        el("span", "k", role === "tool" ? "tool " + ((m[2] || [[""]])[0][0] || "") + (m[5] ? " (error)" : "") : role),
        meta.length ? el("span", "sub", " " + meta.join(" · ")) : null);
      if (m[6]) add(msg, el("div", "sub", "changed: " + m[6]));
      if (text !== undefined && text !== null && textOf(text) !== "") add(msg, el("pre", "text", textOf(text)));
      if (role === "assistant") (m[2] || []).forEach(function (call) {
        var summary = add(el("summary"), el("span", "k", "calls "), el("b", "mono", call[0]));
        add(msg, add(el("details", "tool"), summary, el("code", null, call[1] || "{}")));
      });
      add(box, msg);
    });
    return box;
  }

  function runColumn(si, multi, shared) {
    var s = SAMPLES[si];
    var col = el("div", "runcol");
    col.dataset.run = String(s.r);
    if (multi) add(col, add(el("div", "runcol-head"), el("span", "swatch " + RUNS[s.r].css), RUNS[s.r].label));
    add(col, add(el("div"), badges(outcome(s, ""))));
    if (!shared.p) addPrompt(col, s);
    if (!shared.g) add(col, textField("Target", s.g));
    if (!shared.md && s.md) add(col, field("Metadata", JSON.stringify(s.md, null, 2)));
    add(col, el("h3", null, "Responses"));
    var reps = s.o || [];
    if (!reps.length) add(col, el("p", "sub", "No response recorded."));
    reps.forEach(function (r, i) { add(col, responseBox(r || {}, i, reps.length)); });
    if (s.fl) Object.keys(s.fl).forEach(function (f) {
      add(col, field("Filtered (" + f + ")", s.fl[f].map(textOf).join("\n")));
    });
    add(col, el("h3", null, "Evaluations"));
    if (!(s.v || []).length) add(col, el("p", "sub", "No verdicts."));
    (s.v || []).forEach(function (v) {
      var list = v[3] || [];
      list.forEach(function (d, rep) { add(col, verdictBox(v[0], d, rep, list.length)); });
      if (!list.length) add(col, verdictBox(v[0], [v[1], v[2] === 1, null, null, v[2] === null ? "no verdict" : null], 0, 1));
    });
    return col;
  }

  function openDetail(task, sid, runHint) {
    var found = index[task + "\u0000" + sid];
    var list = null;
    if (found) {
      var first = found.filter(function (i) { return SAMPLES[i].r === runHint; })[0];
      if (first === undefined) first = found[0];
      list = byDoc[task + "\u0000" + SAMPLES[first].d].slice();
      list.sort(function (a, b) { return SAMPLES[a].r - SAMPLES[b].r; });
    }
    var panel = byId("detail");
    clear(panel);
    var head = el("div", "detail-head");
    var title = el("h2", null, task + " / " + sid);
    title.id = "detail-title";
    var close = el("button", null, "Close ✕");
    close.type = "button";
    close.id = "detail-close";
    close.addEventListener("click", closeDetail);
    add(head, title, close);
    add(panel, head);
    if (!list) {
      add(panel, el("p", "empty", "No sample " + sid + " in task " + task + "."));
    } else {
      var s = SAMPLES[first];
      panel.dataset.sample = task + "/" + sid;
      add(panel, el("p", "sub", "doc_id " + s.d + (list.length > 1 ? " · in " + list.length + " runs" : "")));
      var link = el("a", null, "link to this sample");
      link.setAttribute("href", sampleHref(s));
      add(panel, add(el("p"), link));
      var same = function (key) {
        return list.every(function (i) { return JSON.stringify(SAMPLES[i][key]) === JSON.stringify(s[key]); });
      };
      var shared = { p: same("p") && same("n"), g: same("g"), md: same("md") };
      if (shared.p) addPrompt(panel, s);
      if (shared.g) add(panel, textField("Target", s.g));
      if (shared.md && s.md) add(panel, field("Metadata", JSON.stringify(s.md, null, 2)));
      var cols = el("div", "columns");
      list.forEach(function (si) { add(cols, runColumn(si, RUNS.length > 1, shared)); });
      add(panel, cols);
    }
    panel.hidden = false;
    byId("detail-backdrop").hidden = false;
    close.focus();
  }

  function closeDetail() {
    byId("detail").hidden = true;
    byId("detail-backdrop").hidden = true;
    if (/^#sample=/.test(location.hash)) history.replaceState(null, "", location.pathname + location.search + "#samples");
  }

  // ---- deep links: #sample=<task>/<id>[&run=<n>] and #theme=<run>.<n> --------------------------------------
  function parseSample(raw) {
    var amp = raw.indexOf("&");
    var rest = amp >= 0 ? raw.slice(amp + 1) : "";
    var body = amp >= 0 ? raw.slice(0, amp) : raw;
    var run = null;
    var m = /(?:^|&)run=(\d+)/.exec(rest);
    if (m) run = Number(m[1]);
    var slash = body.indexOf("/");
    if (slash >= 0) {
      var task = decodeURIComponent(body.slice(0, slash));
      if (TASKS.indexOf(task) >= 0) return [task, decodeURIComponent(body.slice(slash + 1)), run];
    }
    var whole = decodeURIComponent(body);
    var best = null;
    TASKS.forEach(function (t) { if (whole.indexOf(t + "/") === 0 && (!best || t.length > best.length)) best = t; });
    if (best) return [best, whole.slice(best.length + 1), run];
    return slash >= 0 ? [decodeURIComponent(body.slice(0, slash)), decodeURIComponent(body.slice(slash + 1)), run] : null;
  }

  function route() {
    var h = location.hash;
    var m;
    try {
      if ((m = /^#sample=(.*)$/.exec(h))) {
        var parsed = parseSample(m[1]);
        if (parsed) { openDetail(parsed[0], parsed[1], parsed[2]); return; }
      } else if ((m = /^#theme=(\d+)\.(\d+)$/.exec(h))) {
        var th = (DATA.themes || []).find(function (t) { return t.r === Number(m[1]) && t.n === Number(m[2]); });
        if (th) {
          state.theme = { label: th.label, members: new Set(th.idx) };
          state.page = 0;
          renderThemeChip();
          refresh();
          byId("samples").scrollIntoView();
        }
      }
    } catch (e) { /* a malformed link (bad percent-encoding) opens nothing */ }
    if (!byId("detail").hidden && !/^#sample=/.test(h)) closeDetail();
  }

  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Escape" && !byId("detail").hidden) closeDetail();
  });
  byId("detail-backdrop").addEventListener("click", closeDetail);
  window.addEventListener("hashchange", route);

  setupControls();
  byId("sample-total").textContent = String(SAMPLES.length);
  refresh();
  route();
  document.body.dataset.ready = "1";
  window.assayReadyAt = performance.now();
})();
