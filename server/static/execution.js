// The execution page follows the execution's event stream: new events
// are appended to the timeline, and the page's live part (status, usage,
// approvals, graph, controls, debates, model loops, checkpoints) is
// fetched again from the server when the execution may have changed, so
// that the controls shown are always those its status allows. The text
// states stream while they run grows in the Streaming section. Without
// this script the page is the same, as of its loading (streamed text is
// not history: a state's result is, once it ends). The progress states
// report shows as bars in the Progress section, the execution's own bar
// in the live part.
"use strict";
(function () {
  var timeline = document.getElementById("timeline");
  if (!timeline || !window.EventSource) return;
  var id = timeline.dataset.execution;
  var currency = timeline.dataset.currency || "";
  var flaggedTypes = { GovernanceViolation: true, ToolDenied: true, BudgetExceeded: true };
  var source = new EventSource("/v1/executions/" + encodeURIComponent(id) + "/events?after=" + timeline.dataset.lastSeq);

  // shortTime writes an RFC 3339 time as the page does: 2006-01-02 15:04:05Z.
  function shortTime(t) {
    return String(t).replace("T", " ").replace(/\.\d+/, "");
  }
  function setStatus(s) {
    var status = document.getElementById("status");
    if (!status) return;
    status.textContent = s;
    status.className = "status status-" + s;
  }
  function add(parent, tag, cls, text) {
    var el = document.createElement(tag);
    if (cls) el.className = cls;
    if (text !== undefined) el.textContent = text;
    parent.appendChild(el);
    return el;
  }
  // details shows a payload as the server does: the first maxShown bytes
  // of it, and when it is longer, how much was cut and a link (href) to
  // the whole.
  var maxShown = 64 * 1024;
  function details(li, label, value, href) {
    if (value === undefined || value === null) return;
    var d = add(li, "details");
    add(d, "summary", "", label);
    var text = JSON.stringify(value, null, 2);
    var bytes = new TextEncoder().encode(text);
    if (bytes.length <= maxShown) {
      add(d, "pre", "", text);
      return;
    }
    var shown = new TextDecoder().decode(bytes.subarray(0, maxShown)).replace(/\uFFFD$/, "");
    var kept = new TextEncoder().encode(shown).length;
    add(d, "pre", "", shown);
    var note = add(d, "p", "cut", size(kept) + " of " + size(bytes.length) + " shown, " + size(bytes.length - kept) + " cut: ");
    add(note, "a", "whole", "the whole as JSON").href = href;
  }
  // size writes a size as the server does: 2.9 MB, 65.5 kB, 512 bytes.
  function size(n) {
    if (n >= 1e6) return (n / 1e6).toFixed(1) + " MB";
    if (n >= 1e3) return (n / 1e3).toFixed(1) + " kB";
    return n + " bytes";
  }
  // usageText writes a call's usage as the page does.
  function usageText(u) {
    var s = (u.tokens || 0) + " tokens (" + (u.inputTokens || 0) + " in, " + (u.outputTokens || 0) + " out)";
    if (u.cost) s += ", cost " + u.cost + (currency ? " " + currency : "");
    return s;
  }

  // The live part is fetched again soon after an event that may change
  // the execution's status or controls, and at most every few seconds
  // after the others (usage, debate rounds, model turns, Map items); one
  // fetch at a time.
  var soon = 100, later = 2000;
  var timer = null, due = 0, fetching = false, again = false;
  function refresh(delay) {
    var at = Date.now() + delay;
    if (timer && due <= at) return;
    clearTimeout(timer);
    due = at;
    timer = setTimeout(fetchLive, delay);
  }
  function fetchLive() {
    timer = null;
    if (fetching) { again = true; return; }
    var live = document.getElementById("live");
    if (!live) return;
    fetching = true;
    fetch(live.dataset.live, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) { if (html) replaceLive(html); })
      .catch(function () {})
      .then(function () {
        fetching = false;
        if (again) { again = false; refresh(soon); }
      });
  }
  // replaceLive puts the fetched live part in place of the shown one,
  // keeping the keyboard focus (by id, or by form and name).
  function replaceLive(html) {
    var tpl = document.createElement("template");
    tpl.innerHTML = html;
    var next = tpl.content.getElementById("live");
    var live = document.getElementById("live");
    if (!next || !live) return;
    // Nothing changed: the shown part stays, focus and typing with it.
    if (next.outerHTML === live.outerHTML) return;
    // The redrive form stays as the operator left it: the patch typed,
    // and why the server refused it.
    var form = live.querySelector("#redrive-form"), nextForm = next.querySelector("#redrive-form");
    var patch = form && form.querySelector("#redrive-patch");
    if (nextForm && patch && (patch.value || form.querySelector("#redrive-patch-error"))) nextForm.replaceWith(form.cloneNode(true));
    var focused = document.activeElement, selector = null;
    if (focused && live.contains(focused)) {
      if (focused.id) selector = "#" + CSS.escape(focused.id);
      else if (focused.form && focused.form.id && focused.name) selector = "#" + CSS.escape(focused.form.id) + " [name='" + CSS.escape(focused.name) + "']";
    }
    live.replaceWith(next);
    if (selector) {
      var el = next.querySelector(selector);
      if (el) el.focus();
    }
  }

  // markState sets the class of a state's node in the graph (its <title>
  // is "Name (Type)"); "" clears it.
  function markState(name, cls) {
    var titles = document.querySelectorAll("#graph g.node > title, #graph g.node > a > title");
    for (var i = 0; i < titles.length; i++) {
      if (titles[i].textContent.indexOf(name + " (") !== 0) continue;
      var g = titles[i].closest("g.node");
      g.setAttribute("class", "node" + (cls ? " " + cls : ""));
    }
  }
  function clearCurrent() {
    var cur = document.querySelectorAll("#graph g.node.current");
    for (var i = 0; i < cur.length; i++) cur[i].setAttribute("class", "node visited");
  }
  // changesControls tells the events after which the controls may differ:
  // the execution's own, approvals and checkpoints.
  function changesControls(type) {
    return /^(Execution|Approval|ForkedTo|CheckpointSaved|ChildExecution)/.test(type);
  }
  function onEvent(msg) {
    var ev = JSON.parse(msg.data);
    if (document.getElementById("event-" + ev.seq)) return;
    var flagged = flaggedTypes[ev.type] || (ev.type === "GuardrailChecked" && ev.error);
    var li = add(timeline, "li", "event" + (flagged ? " flagged" : ""));
    li.id = "event-" + ev.seq;
    li.dataset.type = ev.type;
    add(li, "span", "seq", String(ev.seq));
    add(li, "span", "type", ev.type);
    if (ev.state) add(li, "span", "state", (ev.scope || "") + ev.state);
    var when = add(li, "time", "", shortTime(ev.timestamp));
    when.dateTime = ev.timestamp;
    if (flagged) add(li, "strong", "flag", "refused");
    if (ev.detail && ev.detail.usage && /^Task(Succeeded|Failed|TimedOut)$/.test(ev.type)) add(li, "span", "usage", usageText(ev.detail.usage));
    if (ev.error) {
      // As the server writes it: the name in red, then the cause.
      var err = add(li, "div", "event-error");
      add(err, "span", "error-name", ev.error);
      err.appendChild(document.createTextNode(" " + (ev.cause || "")));
    }
    if (/^ChildExecution(Started|Ended|Stopped)$/.test(ev.type) && ev.detail && typeof ev.detail.execution === "string") {
      // As the server writes it: a link to the child.
      var started = add(li, "p", "event-child", "Child execution ");
      var link = add(started, "a", "child-link", ev.detail.execution);
      link.href = "/executions/" + encodeURIComponent(ev.detail.execution);
    }
    var at = "/executions/" + encodeURIComponent(id) + "/events/" + ev.seq + "/";
    details(li, "Input", ev.input, at + "input");
    details(li, "Output", ev.output, at + "output");
    details(li, "Detail", ev.detail, at + "detail");
    timeline.dataset.lastSeq = String(ev.seq);
    if (ev.state && !ev.scope) {
      if (/StateEntered$/.test(ev.type)) { clearCurrent(); markState(ev.state, "current"); }
      if (/StateExited$/.test(ev.type)) markState(ev.state, "visited");
      if (/(Failed|TimedOut)$/.test(ev.type)) markState(ev.state, "failed");
    }
    if (ev.type === "ApprovalRequested") setStatus("WAITING");
    if (ev.type === "ApprovalDecided" || ev.type === "ExecutionResumed" || ev.type === "ExecutionRedriven") setStatus("RUNNING");
    refresh(changesControls(ev.type) ? soon : later);
  }
  // Streamed text: what a state's agent streams while it runs, one
  // panel per state visit (its step), the text of each turn growing as
  // chunks come, a caret while it runs. A restart (a retry, or the run
  // resumed elsewhere) voids what came before; the end marks it done, or
  // failed with its error. Text is only ever set as text.
  var streams = document.getElementById("streams");
  var panels = {}, lastChunk = 0;
  function panel(c) {
    var key = c.step || c.state;
    var p = panels[key];
    if (p) return p;
    var art = add(streams, "article", "stream running");
    art.dataset.state = c.state;
    art.dataset.step = key;
    var h = add(art, "h3", "", c.state);
    var st = add(h, "span", "stream-state", "");
    p = panels[key] = { art: art, status: st, turns: {}, last: null };
    streams.hidden = false;
    return p;
  }
  function running(p, c, text) {
    p.art.className = "stream running";
    p.status.textContent = " " + text + attemptText(c);
  }
  // attemptText names a retry's attempt (a chunk's attempt counts from 0).
  function attemptText(c) {
    return c.attempt > 0 ? " (attempt " + (c.attempt + 1) + ")" : "";
  }
  function caretOff(p) {
    var carets = p.art.querySelectorAll(".caret");
    for (var i = 0; i < carets.length; i++) carets[i].remove();
  }
  function turnOf(p, n) {
    var t = p.turns[n];
    if (t) return t;
    var div = add(p.art, "div", "stream-turn");
    div.dataset.turn = String(n);
    if (n > 0) add(div, "h4", "", "Turn " + n);
    var pre = add(div, "pre", "stream-text");
    t = p.turns[n] = { text: add(pre, "span", "text", ""), pre: pre };
    return t;
  }
  function onChunk(kind, c) {
    // A reconnection sends nothing twice, but a chunk seen is not shown again.
    if (c.seq && kind !== "stream-start" && kind !== "restart" && c.seq <= lastChunk) return;
    lastChunk = c.seq || lastChunk;
    var p = panel(c);
    switch (kind) {
      case "stream-start":
        running(p, c, "streaming…");
        break;
      case "restart":
        // What came before is void: the turns go, a note says why.
        caretOff(p);
        Array.prototype.forEach.call(p.art.querySelectorAll(".stream-turn, .event-error"), function (el) { el.remove(); });
        p.turns = {};
        p.last = null;
        add(p.art, "p", "stream-note", "restarted" + attemptText(c) + ": the text so far was dropped");
        running(p, c, "streaming…");
        break;
      case "chunk":
        var t = turnOf(p, c.turn || 0);
        if (p.last && p.last !== t) caretOff(p);
        t.text.appendChild(document.createTextNode(c.text || ""));
        if (!t.pre.querySelector(".caret")) add(t.pre, "span", "caret");
        p.last = t;
        if (!/running/.test(p.art.className)) running(p, c, "streaming…");
        break;
      case "stream-end":
        caretOff(p);
        if (c.error) {
          p.art.className = "stream failed";
          p.status.textContent = " failed";
          var err = add(p.art, "div", "event-error");
          add(err, "span", "error-name", c.error);
        } else {
          p.art.className = "stream done";
          p.status.textContent = " done";
        }
        break;
    }
  }
  if (streams) {
    ["stream-start", "restart", "chunk", "stream-end"].forEach(function (kind) {
      source.addEventListener(kind, function (msg) { onChunk(kind, JSON.parse(msg.data)); });
    });
    source.addEventListener("chunks-missed", function (msg) {
      var m = JSON.parse(msg.data);
      streams.hidden = false;
      add(streams, "p", "stream-note", (m.count || 0) + " streamed chunks were missed (the page fell behind): the states' results are in the timeline when they end.");
    });
  }

  // Progress: a panel per state visit (its step) from the progress
  // events, its bar and facts set again at each report — a Map's counts,
  // failed items, its rate over the last reports and an estimated end; an
  // agent's percentage and its latest report; the milestones reached,
  // listed. Text is only ever set as text.
  var progressLive = document.getElementById("progress-live");
  var bars = {};
  function progressPanel(c) {
    var key = c.step || c.state;
    var b = bars[key];
    if (b) return b;
    var art = add(progressLive, "article", "progress-state running");
    art.dataset.state = c.state;
    art.dataset.step = key;
    add(art, "h3", "", c.state);
    var bar = add(art, "progress");
    bar.max = 100;
    bar.setAttribute("aria-label", "Progress of " + c.state);
    var facts = add(art, "p", "facts");
    b = bars[key] = {
      art: art, bar: bar, pct: add(facts, "span", "percentage", ""), counts: add(facts, "span", "counts", ""),
      failed: add(facts, "span", "failed", ""), rate: add(facts, "span", "rate", ""), eta: add(facts, "span", "eta", ""),
      report: add(art, "p", "report", ""), milestones: null, seen: []
    };
    progressLive.hidden = false;
    return b;
  }
  function setText(el, text) {
    el.textContent = text;
    el.hidden = text === "";
  }
  // seconds writes a duration as "45 s", "3 min", "2 h".
  function seconds(s) {
    if (s < 90) return Math.max(1, Math.round(s)) + " s";
    if (s < 5400) return Math.round(s / 60) + " min";
    return Math.round(s / 3600) + " h";
  }
  function onProgress(c) {
    var p = c.progress;
    if (!p) return;
    var b = progressPanel(c);
    if (p.milestone) {
      if (!b.milestones) b.milestones = add(b.art, "ul", "milestones");
      add(b.milestones, "li", "milestone", p.milestone + (typeof p.percentage === "number" ? " (" + p.percentage + "%)" : ""));
      return;
    }
    if (typeof p.percentage === "number") {
      b.bar.value = p.percentage;
      setText(b.pct, Math.round(p.percentage) + "%");
    }
    if (p.total) {
      var done = (p.completed || 0) + (p.failed || 0);
      b.art.dataset.completed = String(p.completed || 0);
      b.art.dataset.total = String(p.total);
      b.art.dataset.failed = String(p.failed || 0);
      setText(b.counts, (p.completed || 0) + "/" + p.total + " done" + (p.inProgress ? ", " + p.inProgress + " running" : ""));
      setText(b.failed, p.failed ? p.failed + " failed" : "");
      // The rate over the last reports (at most 10), from the server's
      // times; the end it gives.
      var at = Date.parse(c.at);
      b.seen.push({ at: at, done: done });
      if (b.seen.length > 10) b.seen.shift();
      var first = b.seen[0], secs = (at - first.at) / 1000;
      if (done >= p.total) {
        setText(b.rate, "");
        setText(b.eta, "all done");
        b.art.className = "progress-state done";
      } else if (secs > 0 && done > first.done) {
        var rate = (done - first.done) / secs;
        setText(b.rate, (rate >= 10 ? Math.round(rate) : rate.toFixed(1)) + " items/s");
        setText(b.eta, "about " + seconds((p.total - done) / rate) + " left");
      }
    }
    if (p.report !== undefined && p.report !== null) {
      setText(b.report, typeof p.report === "string" ? p.report : JSON.stringify(p.report));
    }
  }
  if (progressLive) {
    source.addEventListener("progress", function (msg) { onProgress(JSON.parse(msg.data)); });
  }

  timeline.dataset.events.split(" ").forEach(function (t) {
    source.addEventListener(t, onEvent);
  });
  source.addEventListener("end", function (msg) {
    var e = JSON.parse(msg.data);
    setStatus(e.status);
    var stopped = document.getElementById("stopped");
    if (stopped && e.stoppedAt) stopped.textContent = shortTime(e.stoppedAt);
    source.close();
    refresh(0);
  });
})();
