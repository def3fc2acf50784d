// The executions list and the inbox follow their streams: new executions
// appear and statuses change, new approvals appear and decided ones go,
// without a reload. The inbox counts down to each escalation and
// deadline, and checks an edited document against the workflow's
// governance as it is typed. Without this script both pages are the
// same, as of their loading, and their forms work.
"use strict";
(function () {
  function add(parent, tag, cls, text) {
    var el = document.createElement(tag);
    if (cls) el.className = cls;
    if (text !== undefined) el.textContent = text;
    if (parent) parent.appendChild(el);
    return el;
  }
  // shortTime writes an RFC 3339 time as the pages do: 2006-01-02 15:04:05Z.
  function shortTime(t) {
    return String(t).replace("T", " ").replace(/\.\d+/, "");
  }
  function timeEl(parent, t) {
    var el = add(parent, "time", "", shortTime(t));
    el.dateTime = t;
    return el;
  }
  function setLive(text) {
    var p = document.getElementById("live-status");
    if (p) p.textContent = text;
  }

  // follow opens an event stream with a handler per event name.
  function follow(url, handlers) {
    var source = new EventSource(url);
    Object.keys(handlers).forEach(function (name) {
      source.addEventListener(name, function (msg) { handlers[name](JSON.parse(msg.data)); });
    });
    source.addEventListener("open", function () { setLive("Live: kept current as it changes."); });
    source.addEventListener("error", function (msg) {
      if (msg.data) {
        setLive("Live updates stopped: " + JSON.parse(msg.data).detail + " Reload the page.");
        source.close();
      } else if (source.readyState === EventSource.CLOSED) {
        setLive("Live updates stopped: reload the page.");
      } else {
        setLive("Live updates interrupted: reconnecting…");
      }
    });
    return source;
  }

  // The executions list: a row per execution, newest first.
  function followList(table) {
    var tbody = table.tBodies[0];
    var paged = table.dataset.paged === "true";
    var limit = Number(table.dataset.limit) || 50;
    var refill = false;
    function rows() { return tbody.querySelectorAll("tr.execution"); }
    function rowOf(id) {
      var all = rows();
      for (var i = 0; i < all.length; i++) if (all[i].dataset.id === id) return all[i];
      return null;
    }
    function emptyRow() {
      var none = document.getElementById("no-execution");
      if (rows().length > 0) { if (none) none.remove(); return; }
      if (none) return;
      var tr = add(tbody, "tr");
      tr.id = "no-execution";
      add(tr, "td", "", "No execution.").colSpan = 5;
    }
    function fill(tr, e) {
      var cell = tr.querySelector(".status-cell");
      cell.textContent = "";
      add(cell, "span", "status status-" + e.status, e.status);
      if (e.error) { cell.appendChild(document.createTextNode(" ")); add(cell, "span", "error-name", e.error); }
      var stopped = tr.querySelector(".stopped-cell");
      stopped.textContent = "";
      if (e.stoppedAt) timeEl(stopped, e.stoppedAt); else stopped.textContent = "—";
    }
    function newRow(e) {
      var tr = add(null, "tr", "execution");
      tr.dataset.id = e.id;
      tr.dataset.started = e.startedAt;
      var a = add(add(tr, "td"), "a", "", e.id);
      a.href = "/executions/" + encodeURIComponent(e.id);
      add(tr, "td", "status-cell");
      add(tr, "td", "", e.workflow || "");
      timeEl(add(tr, "td"), e.startedAt);
      add(tr, "td", "stopped-cell");
      fill(tr, e);
      return tr;
    }
    // newer orders as the list does: by start, then by id, descending.
    function newer(a, b) {
      var ta = Date.parse(a.dataset.started), tb = Date.parse(b.dataset.started);
      return ta !== tb ? ta > tb : a.dataset.id > b.dataset.id;
    }
    follow(table.dataset.stream, {
      execution: function (e) {
        var tr = rowOf(e.id);
        if (tr) { fill(tr, e); return; }
        if (paged || refill && rows().length >= limit) return;
        tr = newRow(e);
        var all = rows(), i = 0;
        while (i < all.length && !newer(tr, all[i])) i++;
        tbody.insertBefore(tr, i < all.length ? all[i] : null);
        emptyRow();
      },
      gone: function (e) {
        var tr = rowOf(e.id);
        if (tr) tr.remove();
        emptyRow();
      },
      // After a reset the first page of the list follows.
      reset: function () {
        if (paged) return;
        var all = rows();
        for (var i = 0; i < all.length; i++) all[i].remove();
        refill = true;
        emptyRow();
      }
    });
  }

  // span writes a duration in whole seconds: 2d 03h 04m, 3h 04m 05s,
  // 4m 05s, 12s.
  function span(ms) {
    var s = Math.floor(ms / 1000), d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
    s = s % 60;
    function two(n) { return (n < 10 ? "0" : "") + n; }
    if (d > 0) return d + "d " + two(h) + "h " + two(m) + "m";
    if (h > 0) return h + "h " + two(m) + "m " + two(s) + "s";
    if (m > 0) return m + "m " + two(s) + "s";
    return s + "s";
  }
  // tick counts each escalation and deadline down; past zero it says so.
  function tick() {
    var all = document.querySelectorAll(".countdown"), now = Date.now();
    for (var i = 0; i < all.length; i++) {
      var el = all[i], left = el.querySelector(".left");
      var ms = Date.parse(el.querySelector("time").dateTime) - now;
      if (ms > 0) {
        el.classList.remove("passed");
        left.textContent = "(in " + span(ms) + ")";
      } else if (!el.classList.contains("passed")) {
        el.classList.add("passed");
        left.textContent = "";
        if (el.dataset.kind === "deadline") {
          left.appendChild(document.createTextNode("expired — "));
          add(left, "a", "", "refresh").href = location.pathname;
        } else {
          left.textContent = "escalated";
        }
      }
    }
  }
  // countdown shows when kind ("escalation", "deadline") falls; at is an
  // RFC 3339 time or absent.
  function countdown(times, kind, label, at) {
    var el = times.querySelector('.countdown[data-kind="' + kind + '"]');
    if (!at) {
      // None left: one that has just fallen stays, to say so.
      if (el && Date.parse(el.querySelector("time").dateTime) > Date.now()) el.remove();
      return;
    }
    if (!el) {
      el = add(times, "span", "countdown");
      el.dataset.kind = kind;
      el.appendChild(document.createTextNode(" · " + label + " "));
      timeEl(el, at);
      el.appendChild(document.createTextNode(" "));
      add(el, "span", "left");
    }
    var t = el.querySelector("time");
    if (t.dateTime !== at) { t.dateTime = at; t.textContent = shortTime(at); el.classList.remove("passed"); }
  }

  // check runs the server's dry run of a form's decision as its edited
  // document changes, and shows each problem next to the editor; a
  // submit sends the form once the verdict shown is the current text's.
  function checker(form) {
    var edit = form.querySelector("textarea[name=edit]");
    if (!edit || !form.dataset.check) return;
    var list = form.querySelector("ul.problems");
    var timer = null, checked = null, seq = 0;
    function show(res) {
      list.textContent = "";
      edit.setAttribute("aria-invalid", res.ok ? "false" : "true");
      if (res.ok) { add(list, "li", "ok", "The check finds no problem."); return; }
      res.problems.forEach(function (p) {
        var li = add(list, "li", "problem");
        add(li, "code", "where", p.line ? "line " + p.line + ", column " + p.column + " (" + p.path + ")" : p.inEdit ? (p.pointer || "the whole edit") : p.path + " in the document");
        li.appendChild(document.createTextNode(" "));
        add(li, "span", "error-name", p.error);
        li.appendChild(document.createTextNode(" " + p.detail));
      });
      if (res.problems.length === 0) add(list, "li", "problem", res.refused);
      if (res.gone) elsewhere(form.closest("article"));
    }
    function check(then) {
      var text = edit.value, n = ++seq;
      fetch(form.dataset.check, { method: "POST", body: new URLSearchParams(new FormData(form)), credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (r) {
          if ((r.headers.get("Content-Type") || "").indexOf("application/json") !== 0) throw new Error("the server answered " + r.status);
          return r.json();
        })
        .then(function (res) {
          if (n !== seq) return;
          checked = text;
          show(res);
          if (then) then(res);
        })
        .catch(function (err) {
          if (n !== seq) return;
          list.textContent = "";
          add(list, "li", "problem", "The check did not run (" + err.message + "); the server checks the decision when you send it.");
          if (then) then(null);
        });
    }
    edit.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(check, 400);
    });
    form.addEventListener("submit", function (ev) {
      if (checked === edit.value || form.dataset.sending) return;
      ev.preventDefault();
      clearTimeout(timer);
      check(function (res) {
        // A refusal stays on screen; deciding again sends it anyway.
        if (res && !res.ok) return;
        form.dataset.sending = "true";
        form.submit();
      });
    });
  }

  // elsewhere marks an approval that left the inbox while its form was
  // being filled in: what was typed stays, and cannot be sent.
  function elsewhere(art) {
    if (!art || art.classList.contains("elsewhere")) return;
    art.classList.add("elsewhere");
    var note = add(null, "p", "error elsewhere-note", "Decided elsewhere, or expired: this approval is no longer pending. What you typed stays here, but can no longer be sent.");
    note.setAttribute("role", "status");
    art.insertBefore(note, art.children[1]);
    var button = art.querySelector("button[type=submit]");
    if (button) button.disabled = true;
  }

  // The inbox: a card per pending approval, oldest execution first.
  function followInbox(box) {
    var canDecide = box.dataset.canDecide === "true";
    var csrfField = document.querySelector("input[name=csrf]");
    var reset = null;
    function cards() { return box.querySelectorAll("article.approval"); }
    function emptyNote() {
      var empty = document.getElementById("empty");
      if (cards().length > 0) { if (empty) empty.remove(); return; }
      if (!empty) add(box, "p", "", "Nothing waits for a decision.").id = "empty";
    }
    function touched(art) {
      var form = art.querySelector("form");
      return form && (form.dataset.touched === "true" || form.contains(document.activeElement));
    }
    function mark(ev) { if (ev.target.form) ev.target.form.dataset.touched = "true"; }
    box.addEventListener("input", mark);
    box.addEventListener("change", mark);
    function pretty(v) { return typeof v === "string" ? v : JSON.stringify(v, null, 2); }
    // shown writes text as the server does: its first 64 KiB, and when
    // it is longer, how much was cut and a link (href) to the whole.
    function shown(parent, text, href) {
      var max = 64 * 1024, bytes = new TextEncoder().encode(text);
      if (bytes.length <= max) { add(parent, "pre", "", text); return; }
      var part = new TextDecoder().decode(bytes.subarray(0, max)).replace(/\uFFFD$/, "");
      var kept = new TextEncoder().encode(part).length;
      add(parent, "pre", "", part);
      var note = add(parent, "p", "cut", size(kept) + " of " + size(bytes.length) + " shown, " + size(bytes.length - kept) + " cut: ");
      add(note, "a", "whole", "the whole as JSON").href = href;
    }
    function size(n) {
      if (n >= 1e6) return (n / 1e6).toFixed(1) + " MB";
      if (n >= 1e3) return (n / 1e3).toFixed(1) + " kB";
      return n + " bytes";
    }
    // prompt writes an approval's prompt as the server does: a
    // structured one's Title and Description, the rest of it folded.
    function prompt(div, p) {
      if (!p || typeof p !== "object" || Array.isArray(p)) { add(div, "pre", "", pretty(p)); return; }
      var rest = {}, more = false;
      Object.keys(p).sort().forEach(function (k) {
        if ((k === "Title" || k === "Description") && typeof p[k] === "string") return;
        rest[k] = p[k];
        more = true;
      });
      if (typeof p.Title === "string") add(div, "h3", "prompt-title", p.Title);
      if (typeof p.Description === "string") add(div, "p", "prompt-description", p.Description);
      if (more) {
        var d = add(div, "details", "prompt-more");
        add(d, "summary", "", "More");
        add(d, "pre", "", JSON.stringify(rest, null, 2));
      }
    }
    function newCard(a) {
      var art = add(null, "article", "approval card new");
      art.id = "approval-" + a.id;
      art.dataset.id = a.id;
      art.dataset.digest = a.digest;
      var h = add(art, "h2");
      add(h, "a", "", a.execution).href = "/executions/" + encodeURIComponent(a.execution);
      h.appendChild(document.createTextNode(" · "));
      add(h, "span", "state", a.state);
      add(art, "p", "times", "New");
      prompt(add(art, "div", "prompt"), a.prompt);
      var editable = a.editable === undefined ? "" : JSON.stringify(a.editable, null, 2);
      if (editable) {
        var d = add(art, "details", "document");
        d.open = !canDecide;
        add(d, "summary", "", "Document under review");
        shown(d, editable, "/v1/approvals/" + encodeURIComponent(a.id));
      }
      if (!canDecide || !csrfField) return art;
      var form = add(art, "form", "decision-form");
      form.method = "post";
      form.action = "/inbox/" + a.id + "/decide";
      form.dataset.check = "/inbox/" + a.id + "/check";
      function hidden(name, value) { var i = add(form, "input"); i.type = "hidden"; i.name = name; i.value = value; }
      hidden("csrf", csrfField.value);
      hidden("digest", a.digest);
      var fs = add(form, "fieldset");
      add(fs, "legend", "", "Decision");
      a.options.forEach(function (o, i) {
        var label = add(fs, "label");
        var r = add(label, "input");
        r.type = "radio"; r.name = "option"; r.value = o; r.required = true; r.id = "option-" + a.id + "-" + i;
        label.appendChild(document.createTextNode(" " + o));
      });
      function area(name, label, rows, text) {
        var l = add(form, "label", "", label);
        var t = add(form, "textarea");
        t.id = l.htmlFor = name + "-" + a.id;
        t.name = name; t.rows = rows; t.value = text;
        return t;
      }
      if (editable) {
        var t = area("edit", "Edited document (JSON)", 8, editable);
        t.spellcheck = false;
        t.setAttribute("aria-describedby", "problems-" + a.id);
        var ul = add(form, "ul", "problems");
        ul.id = "problems-" + a.id;
        ul.setAttribute("aria-live", "polite");
      }
      area("comment", "Comment", 2, "");
      add(form, "button", "", "Decide").type = "submit";
      checker(form);
      return art;
    }
    function pending(a) {
      var art = document.getElementById("approval-" + a.id);
      if (!art) {
        art = newCard(a);
        box.insertBefore(art, document.getElementById("empty"));
        emptyNote();
      }
      var times = art.querySelector(".times");
      countdown(times, "escalation", "escalates", a.escalatesAt);
      countdown(times, "deadline", "deadline", a.deadline);
      tick();
    }
    function gone(id) {
      var art = document.getElementById("approval-" + id);
      if (!art) return;
      if (touched(art)) { elsewhere(art); return; }
      art.remove();
      emptyNote();
    }
    // After a reset the whole inbox follows: what is not in it has gone.
    function sweep() {
      var all = cards();
      for (var i = 0; i < all.length; i++) if (!reset.seen[all[i].dataset.id]) gone(all[i].dataset.id);
      reset = null;
    }
    follow(box.dataset.stream, {
      pending: function (a) {
        pending(a);
        if (reset) { reset.seen[a.id] = true; if (--reset.left <= 0) sweep(); }
      },
      gone: function (g) { gone(g.id); },
      reset: function (r) {
        reset = { left: r.pending, seen: {} };
        if (r.pending <= 0) sweep();
      }
    });
  }

  var table = document.getElementById("executions");
  if (table && table.dataset.stream && window.EventSource) followList(table);
  var box = document.getElementById("inbox");
  if (box) {
    box.querySelectorAll("form.decision-form").forEach(checker);
    // A refused form holds what was sent: it is not lost if the approval
    // goes meanwhile.
    box.querySelectorAll("article.refused form").forEach(function (f) { f.dataset.touched = "true"; });
    if (document.querySelector(".countdown")) tick();
    setInterval(tick, 1000);
    if (box.dataset.stream && window.EventSource) followInbox(box);
  }
})();
