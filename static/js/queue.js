/* The live processing queue: listens on /ws/events/ and keeps every list marked [data-steps] up to date
   (the dashboard's queue, an upload's receipt). No build step, no dependencies. */
(function () {
  "use strict";
  var lists = document.querySelectorAll("[data-steps]");
  if (!lists.length || !window.WebSocket) return;
  var live = document.getElementById("queue-live");
  var delay = 1000;

  function say(text) { if (live) live.textContent = text; }

  function pillClass(status) {
    return status === "completed" ? "ok" : status === "failed" ? "off" : "info";
  }

  function row(list, event) {
    var rows = list.querySelectorAll("[data-operation]");
    for (var i = 0; i < rows.length; i++) {
      if (rows[i].getAttribute("data-operation") === event.operationId) return rows[i];
    }
    if (list.hasAttribute("data-only")) return null; // an upload's receipt follows one operation only
    var partitions = list.getAttribute("data-partitions");
    if (partitions && partitions.split(",").indexOf(event.partitionId) < 0) return null; // not in the view
    var empty = list.querySelector("[data-role=empty]");
    if (empty) empty.remove();
    var item = document.createElement("li");
    item.setAttribute("data-operation", event.operationId);
    var link = document.createElement("a");
    link.href = "/ui/sources/" + encodeURIComponent(event.sourceId || "") + "/";
    link.textContent = event.sourceId || event.operationId;
    var status = document.createElement("span");
    status.setAttribute("data-role", "status");
    var meta = document.createElement("span");
    meta.className = "meta";
    meta.textContent = new Date().toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
    var steps = document.createElement("div");
    steps.className = "steps";
    steps.setAttribute("data-role", "steps");
    list.getAttribute("data-steps").split(",").forEach(function (name) {
      var pill = document.createElement("span");
      pill.className = "pill";
      pill.setAttribute("data-step", name);
      pill.textContent = name;
      steps.appendChild(pill);
    });
    item.append(link, " ", status, " ", meta, steps);
    list.insertBefore(item, list.firstChild);
    return item;
  }

  function update(event) {
    lists.forEach(function (list) {
      var item = row(list, event);
      if (!item) return;
      item.setAttribute("data-status", event.status);
      var status = item.querySelector("[data-role=status]");
      status.className = "pill " + pillClass(event.status);
      status.textContent = event.status + (event.errorCode ? " · " + event.errorCode : "");
      var done = event.stepsDone || [];
      item.querySelectorAll("[data-step]").forEach(function (pill) {
        var name = pill.getAttribute("data-step");
        var state = event.status === "completed" || done.indexOf(name) >= 0 ? "done"
          : name === event.step && event.status === "processing" ? "now" : "";
        pill.className = "pill" + (state ? " " + state : "");
      });
    });
  }

  // Events sent before the socket opened are gone: read the rows still open once from their source's page.
  function catchUp() {
    document.querySelectorAll("[data-only] [data-operation]").forEach(function (item) {
      var status = item.getAttribute("data-status");
      var source = item.getAttribute("data-source");
      if (!source || status === "completed" || status === "failed") return;
      fetch("/ui/sources/" + encodeURIComponent(source) + "/", { credentials: "same-origin" })
        .then(function (response) { return response.ok ? response.text() : ""; })
        .then(function (html) {
          var page = new DOMParser().parseFromString(html, "text/html");
          var fresh = page.querySelector("[data-operation='" + item.getAttribute("data-operation") + "']");
          if (fresh && item.getAttribute("data-status") === status) item.replaceWith(fresh);
        })
        .catch(function () {});
    });
  }

  function connect() {
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    var socket = new WebSocket(scheme + location.host + "/ws/events/");
    socket.onopen = function () { delay = 1000; say("live"); document.body.setAttribute("data-live", "1"); catchUp(); };
    socket.onmessage = function (message) {
      var event;
      try { event = JSON.parse(message.data); } catch (error) { return; }
      if (event.type === "operation.progress") update(event);
    };
    socket.onclose = function (close) {
      document.body.removeAttribute("data-live");
      if (close.code === 4401) { say("signed out"); return; }
      say("reconnecting…");
      setTimeout(connect, delay);
      delay = Math.min(delay * 2, 30000);
    };
  }
  connect();
})();
