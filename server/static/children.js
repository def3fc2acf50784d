// The execution page's child executions: "Show its graph" opens a child's
// graph in place, below its line, from the child's own page (its live
// part, /executions/{child}/live: the same drawing, with its states'
// statuses); the button closes it again. The graph's states link to the
// child's page. Graphs left open are opened again when the live part is
// fetched anew. The graph's side panel, open on a state that started
// children, lists them with the same control. Without this script the
// children are links to their pages. Text is only ever set as text.
"use strict";
(function () {
  var opened = {}; // the children whose graph is open, by id

  function box(btn) { return document.getElementById(btn.getAttribute("aria-controls")); }
  function note(el, text) {
    el.textContent = "";
    var p = document.createElement("p");
    p.className = "hint";
    p.textContent = text;
    el.appendChild(p);
  }

  // place puts svg, a child's graph, in el: its ids made the box's own
  // (the page has the parent's), its states' links leading to the child's
  // page.
  function place(el, svg, href) {
    var ids = {};
    Array.prototype.forEach.call(svg.querySelectorAll("[id]"), function (n) {
      ids[n.id] = el.id + "-" + n.id;
      n.id = ids[n.id];
    });
    Array.prototype.forEach.call(svg.querySelectorAll("*"), function (n) {
      Array.prototype.forEach.call(n.attributes, function (a) {
        var m = /^url\(#(.+)\)$/.exec(a.value);
        if (m && ids[m[1]]) n.setAttribute(a.name, "url(#" + ids[m[1]] + ")");
      });
      var link = n.getAttribute("href");
      if (link && link.charAt(0) === "#") n.setAttribute("href", href + link);
    });
    el.textContent = "";
    el.appendChild(document.importNode(svg, true));
    var open = document.createElement("p");
    var a = document.createElement("a");
    a.href = href;
    a.textContent = "Open the child's page";
    open.appendChild(a);
    el.appendChild(open);
  }

  function show(btn) {
    var el = box(btn);
    // Only the list's graphs are opened again after a refresh.
    if (btn.closest("#children")) opened[btn.closest("[data-child]").dataset.child] = true;
    btn.setAttribute("aria-expanded", "true");
    btn.textContent = "Hide its graph";
    el.hidden = false;
    el.setAttribute("aria-busy", "true");
    note(el, "Loading…");
    fetch(btn.dataset.live, { credentials: "same-origin", headers: { Accept: "text/html" } }).then(function (r) {
      if (!r.ok) throw new Error("the server answered " + r.status);
      return r.text();
    }).then(function (text) {
      var svg = new DOMParser().parseFromString(text, "text/html").querySelector("#graph svg");
      if (!svg) { note(el, "The child's workflow has no graph to show."); return; }
      place(el, svg, btn.dataset.href);
    }).catch(function (e) {
      note(el, "The child's graph could not be loaded: " + e.message + ".");
    }).then(function () { el.removeAttribute("aria-busy"); });
  }
  function hide(btn) {
    var el = box(btn);
    if (btn.closest("#children")) delete opened[btn.closest("[data-child]").dataset.child];
    btn.setAttribute("aria-expanded", "false");
    btn.textContent = "Show its graph";
    el.hidden = true;
    el.textContent = "";
  }

  document.addEventListener("click", function (ev) {
    var btn = ev.target.closest && ev.target.closest(".child-graph-toggle");
    if (!btn) return;
    ev.preventDefault();
    if (btn.getAttribute("aria-expanded") === "true") hide(btn); else show(btn);
  });

  // setup shows the buttons of the children listed, opening the graphs
  // that were open before the live part was fetched again.
  function setup() {
    Array.prototype.forEach.call(document.querySelectorAll(".child-graph-toggle"), function (btn) {
      if (!btn.hidden) return;
      btn.hidden = false;
      if (opened[btn.closest("[data-child]").dataset.child]) show(btn);
    });
  }
  // The graph's side panel (graph.js), open on a state that started
  // children, lists them too, each with its status and graph.
  var panelBody = document.getElementById("graph-panel-body");
  var panelTitle = document.getElementById("graph-panel-title");
  function panel() {
    if (!panelBody || panelBody.querySelector(".panel-children")) return;
    var name = panelTitle.textContent;
    var kids = Array.prototype.filter.call(document.querySelectorAll("#children li.child[data-node]"), function (li) { return li.dataset.node === name; });
    if (!kids.length) return;
    var sec = document.createElement("section");
    sec.className = "panel-children";
    var h = document.createElement("h3");
    h.textContent = "Child executions (" + kids.length + ")";
    sec.appendChild(h);
    var ul = document.createElement("ul");
    kids.forEach(function (li, i) {
      var src = li.querySelector(".child-graph-toggle");
      var item = document.createElement("li");
      item.dataset.child = li.dataset.child;
      var a = document.createElement("a");
      a.className = "child-link";
      a.href = src.dataset.href;
      a.textContent = li.dataset.child;
      item.appendChild(a);
      var st = li.querySelector(".status");
      if (st) {
        item.appendChild(document.createTextNode(" "));
        item.appendChild(st.cloneNode(true));
      }
      var btn = document.createElement("button");
      btn.type = "button";
      btn.className = "child-graph-toggle";
      btn.textContent = "Show its graph";
      btn.setAttribute("aria-expanded", "false");
      btn.setAttribute("aria-controls", "panel-child-graph-" + (i + 1));
      btn.dataset.live = src.dataset.live;
      btn.dataset.href = src.dataset.href;
      item.appendChild(document.createTextNode(" "));
      item.appendChild(btn);
      var box = document.createElement("div");
      box.className = "child-graph";
      box.id = "panel-child-graph-" + (i + 1);
      box.hidden = true;
      item.appendChild(box);
      ul.appendChild(item);
    });
    sec.appendChild(ul);
    panelBody.appendChild(sec);
  }
  if (panelBody && panelTitle && window.MutationObserver) new MutationObserver(panel).observe(panelBody, { childList: true });

  setup();
  var live = document.getElementById("live");
  if (live && live.parentNode && window.MutationObserver) new MutationObserver(setup).observe(live.parentNode, { childList: true });
})();
