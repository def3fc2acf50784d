// The execution page's graph, interactive: a click on a state's node (or
// Enter or Space on it, focused) opens the side panel with that state's
// visits — entered and exited times, input and output (cut, with a link
// to the whole), failed attempts, errors, and its agent's model turns,
// tool calls and steps — from the graph's JSON data (#graph-data's
// data-json);
// Escape or × closes it. The buttons, the wheel and a drag zoom and pan
// the picture through its viewBox (the picture keeps its size, and its
// box scrolls as without the script); Fit shows the whole drawing,
// shrunk to the box when it is wider. The live part
// holding the graph is fetched again while the execution runs: the view
// and the open panel are carried over to the new picture. Text is only
// ever set as text. Without this script the nodes link to the timeline.
"use strict";
(function () {
  var panel = document.getElementById("graph-panel");
  var body = document.getElementById("graph-panel-body");
  var title = document.getElementById("graph-panel-title");
  if (!panel || !body) return;
  var view = null;   // the viewBox shown [x, y, w, h]; null: the whole
  var openState = null, opener = null;

  function svg() { return document.querySelector("#graph svg"); }
  // full is the whole drawing: the picture's size as the server drew it.
  // (Kept aside, not in the page: the live part is replaced only when
  // the server's differs from the page's, so the script leaves it as it
  // came until the reader zooms or opens a state.)
  var sizes = new WeakMap();
  function full(s) {
    if (!sizes.has(s)) sizes.set(s, [0, 0, parseFloat(s.getAttribute("width")), parseFloat(s.getAttribute("height"))]);
    return sizes.get(s).slice();
  }
  // fit shows the whole drawing, the picture shrunk to the graph's box
  // when it is wider (as drawn, the box scrolls to it).
  function fit() {
    var s = svg(), g = document.getElementById("graph");
    if (!s || !g) return;
    var whole = full(s), f = Math.min(1, (g.clientWidth - 2) / whole[2]);
    s.setAttribute("width", String(Math.floor(whole[2] * f)));
    s.setAttribute("height", String(Math.floor(whole[3] * f)));
    fitted = f < 1;
    setView(null);
  }
  var fitted = false;
  function setView(v) {
    var s = svg();
    if (!s) return;
    view = v;
    var b = v || full(s);
    s.setAttribute("viewBox", b.map(function (n) { return Math.round(n * 10) / 10; }).join(" "));
  }
  // zoom scales the view by f (<1 zooms in) around the point (fx, fy),
  // given as fractions of the view.
  function zoom(f, fx, fy) {
    var s = svg();
    if (!s) return;
    var b = view || full(s), whole = full(s);
    var w = Math.min(Math.max(b[2] * f, whole[2] / 20), whole[2] * 4);
    var h = w * b[3] / b[2];
    setView([b[0] + (b[2] - w) * fx, b[1] + (b[3] - h) * fy, w, h]);
  }
  function data() {
    var el = document.getElementById("graph-data");
    if (!el) return {};
    try { return JSON.parse(el.dataset.json) || {}; } catch (e) { return {}; }
  }

  function add(parent, tag, cls, text) {
    var el = document.createElement(tag);
    if (cls) el.className = cls;
    if (text !== undefined) el.textContent = text;
    parent.appendChild(el);
    return el;
  }
  function when(t) { return t ? String(t).replace("T", " ").replace(/\.\d+/, "") : ""; }
  function payload(parent, label, p) {
    if (!p) return;
    var d = add(parent, "details", "payload");
    d.open = true;
    add(d, "summary", "", label);
    add(d, "pre", "", p.text);
    if (p.cut) {
      var note = add(d, "p", "cut", p.cut + " bytes cut: ");
      add(note, "a", "whole", "the whole as JSON").href = p.href;
    }
  }
  function failure(parent, cls, name, cause) {
    var e = add(parent, "div", "event-error " + cls);
    add(e, "span", "error-name", name || "");
    e.appendChild(document.createTextNode(" " + (cause || "")));
  }
  function show(name) {
    var st = data()[name];
    openState = name;
    title.textContent = name;
    body.textContent = "";
    if (!st || !st.visits || !st.visits.length) {
      add(body, "p", "hint", "Not run yet.");
      return;
    }
    if (st.earlier) add(body, "p", "hint", st.earlier + " earlier visits left out: the timeline has them.");
    st.visits.forEach(function (v, i) {
      var art = add(body, "article", "visit" + (v.error ? " failed" : ""));
      var h = add(art, "h3");
      var a = add(h, "a", "", (v.state !== name ? v.state : "Visit " + (i + 1 + (st.earlier || 0))));
      a.href = "#event-" + v.seq;
      var facts = add(art, "dl", "visit-facts");
      add(facts, "dt", "", "Entered");
      add(facts, "dd", "entered", when(v.entered));
      add(facts, "dt", "", "Exited");
      add(facts, "dd", "exited", v.exited ? when(v.exited) : (v.error ? "failed" : "not yet"));
      if (v.error) failure(art, "visit-error", v.error, v.cause);
      payload(art, "Input", v.input);
      payload(art, "Output", v.output);
      if (v.failures && v.failures.length) {
        var retried = v.exited || !v.error ? v.failures : v.failures.slice(0, -1);
        if (retried.length) {
          add(art, "h4", "", "Failed attempts (" + retried.length + ")");
          var ul = add(art, "ul", "failures");
          retried.forEach(function (f) {
            var li = add(ul, "li", "failure");
            add(li, "time", "", when(f.time) + " ");
            failure(li, "", f.error || f.type, f.cause);
          });
        }
      }
      if (v.calls && v.calls.length) {
        add(art, "h4", "", "Model turns and tool calls (" + v.calls.length + ")");
        var calls = add(art, "ul", "calls");
        v.calls.forEach(function (c) {
          var li = add(calls, "li", "call " + c.kind + (c.failed ? " failed" : ""));
          li.dataset.kind = c.kind;
          if (c.tool) li.dataset.tool = c.tool;
          var head = add(li, "p", "speaker");
          var link = add(head, "a", "", c.kind === "ModelTurn" ? "Model turn" : c.kind === "ToolCall" ? "Tool call" : "Step");
          link.href = "#event-" + c.seq;
          if (c.tool) add(head, "strong", "tool", " " + c.tool);
          if (c.model) add(head, "span", "model", " " + c.model);
          if (c.name) add(head, "code", "step-name", " " + c.name);
          if (c.failed) failure(li, "", c.error, c.cause);
          payload(li, c.kind === "ToolCall" ? "Arguments" : "Input", c.input);
          payload(li, c.kind === "ToolCall" ? "Result" : "Output", c.output);
          // A turn's conversation is long: folded.
          if (c.kind === "ModelTurn") Array.prototype.forEach.call(li.querySelectorAll("details"), function (d) { d.open = false; });
        });
      }
    });
  }
  function open(node) {
    opener = node;
    show(node.dataset.state);
    panel.hidden = false;
    mark();
    panel.focus();
  }
  function close() {
    panel.hidden = true;
    openState = null;
    mark();
    // The focus goes back to the node the panel was opened from, or, when
    // a live update drew the graph again meanwhile, to its state's node now.
    var back = opener;
    if (back && !document.contains(back)) {
      back = null;
      var nodes = document.querySelectorAll("#graph [data-state]");
      for (var i = 0; i < nodes.length && !back; i++) {
        if (nodes[i].dataset.state === opener.dataset.state) back = nodes[i];
      }
    }
    if (back) back.focus();
    opener = null;
  }
  // mark shows which node the panel is open on.
  function mark() {
    var nodes = document.querySelectorAll("#graph [data-state]");
    for (var i = 0; i < nodes.length; i++) {
      var on = nodes[i].dataset.state === openState;
      if (on) nodes[i].setAttribute("aria-expanded", "true");
      else nodes[i].removeAttribute("aria-expanded");
      if (on !== nodes[i].classList.contains("selected")) nodes[i].classList.toggle("selected", on);
    }
  }

  document.addEventListener("click", function (ev) {
    if (dragged) { ev.preventDefault(); dragged = false; return; }
    var node = ev.target.closest && ev.target.closest("#graph [data-state]");
    if (node) { ev.preventDefault(); open(node); return; }
    var btn = ev.target.closest && ev.target.closest("#graph [data-zoom]");
    if (btn) {
      var z = btn.dataset.zoom;
      if (z === "fit") fit();
      else zoom(z === "in" ? 0.8 : 1.25, 0.5, 0.5);
      return;
    }
    if (ev.target.closest && ev.target.closest("#graph-panel-close")) close();
  });
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Escape" && !panel.hidden) { ev.preventDefault(); close(); return; }
    var node = ev.target.closest && ev.target.closest("#graph [data-state]");
    if (node && (ev.key === "Enter" || ev.key === " ")) { ev.preventDefault(); open(node); return; }
    if (ev.target.closest && ev.target.closest("#graph") && !/INPUT|TEXTAREA|SELECT/.test(ev.target.tagName)) {
      if (ev.key === "+" || ev.key === "=") { ev.preventDefault(); zoom(0.8, 0.5, 0.5); }
      if (ev.key === "-") { ev.preventDefault(); zoom(1.25, 0.5, 0.5); }
    }
  });

  // The wheel zooms around the pointer; a drag pans.
  var drag = null, dragged = false;
  document.addEventListener("wheel", function (ev) {
    var s = svg();
    if (!s || !s.contains(ev.target)) return;
    ev.preventDefault();
    var r = s.getBoundingClientRect();
    zoom(ev.deltaY < 0 ? 0.9 : 1 / 0.9, (ev.clientX - r.left) / r.width, (ev.clientY - r.top) / r.height);
  }, { passive: false });
  document.addEventListener("pointerdown", function (ev) {
    var s = svg();
    if (!s || !s.contains(ev.target) || ev.button !== 0) return;
    var r = s.getBoundingClientRect(), b = view || full(s);
    drag = { x: ev.clientX, y: ev.clientY, b: b, sx: b[2] / r.width, sy: b[3] / r.height };
    dragged = false;
  });
  document.addEventListener("pointermove", function (ev) {
    if (!drag) return;
    var dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
    if (!dragged && Math.abs(dx) + Math.abs(dy) < 4) return;
    dragged = true;
    setView([drag.b[0] - dx * drag.sx, drag.b[1] - dy * drag.sy, drag.b[2], drag.b[3]]);
  });
  document.addEventListener("pointerup", function () {
    drag = null;
    // A click follows a drag's end: it is swallowed (see above) only
    // right after it.
    setTimeout(function () { dragged = false; }, 0);
  });

  // setup makes the shown picture interactive, keeping the view and the
  // open panel when the live part was fetched again.
  var shown = null;
  function setup() {
    var s = svg();
    if (!s || s === shown) return;
    shown = s;
    document.documentElement.classList.add("graph-interactive");
    if (fitted) fit();
    if (view) setView(view);
    mark();
    if (openState && !panel.hidden) show(openState);
  }
  setup();
  var main = document.getElementById("live") && document.getElementById("live").parentNode;
  if (main && window.MutationObserver) new MutationObserver(setup).observe(main, { childList: true });
})();
