// The execution page follows the execution's event stream: new events
// are appended to the timeline and the status is kept current. Without
// this script the page is the same, as of its loading.
"use strict";
(function () {
  var timeline = document.getElementById("timeline");
  var status = document.getElementById("status");
  if (!timeline || !window.EventSource) return;
  var id = timeline.dataset.execution;
  var flaggedTypes = { GovernanceViolation: true, ToolDenied: true, BudgetExceeded: true };
  var source = new EventSource("/v1/executions/" + encodeURIComponent(id) + "/events?after=" + timeline.dataset.lastSeq);

  // shortTime writes an RFC 3339 time as the page does: 2006-01-02 15:04:05Z.
  function shortTime(t) {
    return String(t).replace("T", " ").replace(/\.\d+/, "");
  }
  function setStatus(s) {
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
  function details(li, label, value) {
    if (value === undefined || value === null) return;
    var d = add(li, "details");
    add(d, "summary", "", label);
    add(d, "pre", "", JSON.stringify(value, null, 2));
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
    if (ev.error) add(li, "div", "event-error", ev.error + " " + (ev.cause || ""));
    details(li, "Input", ev.input);
    details(li, "Output", ev.output);
    details(li, "Detail", ev.detail);
    timeline.dataset.lastSeq = String(ev.seq);
    if (ev.state && !ev.scope) {
      if (/StateEntered$/.test(ev.type)) { clearCurrent(); markState(ev.state, "current"); }
      if (/StateExited$/.test(ev.type)) markState(ev.state, "visited");
      if (/(Failed|TimedOut)$/.test(ev.type)) markState(ev.state, "failed");
    }
    if (ev.type === "ApprovalRequested") setStatus("WAITING");
    if (ev.type === "ApprovalDecided" || ev.type === "ExecutionResumed") setStatus("RUNNING");
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
  });
})();
