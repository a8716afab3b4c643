// tickloop dashboard: live refresh over Server-Sent Events. The pages work without it.
// On a `change` event the approval badge is updated and the page's <main> is fetched again (same
// origin, our own server-rendered HTML). A page of decision cards is frozen: when its cards differ
// (one was decided elsewhere, a new one waits) nothing moves under the person's finger; the gone
// cards are greyed and their buttons disabled in place, and a bar says "N changed — show".
// A form being filled in is never replaced. Past the server's stream cap (503) it polls instead.
(function () {
  "use strict";
  var body = document.body;
  var url = body.getAttribute("data-events");
  var state = document.getElementById("live-state");
  if (!url) { return; }
  var pending = null;
  function say(text) { if (state) { state.textContent = text; } }
  function busy() {
    var fields = document.querySelectorAll("main textarea, main input[type=text], main input:not([type])");
    for (var i = 0; i < fields.length; i++) {
      if (fields[i].value || fields[i] === document.activeElement) { return true; }
    }
    return false;
  }
  function badge(data) {
    var el = document.getElementById("waiting-count");
    if (!el) { return; }
    var profile = el.getAttribute("data-profile");
    var n = profile && data.waiting && profile in data.waiting ? data.waiting[profile] : data.total;
    el.textContent = n ? String(n) : "";
  }
  function cards(root) {
    var found = root.querySelectorAll("[data-card]");
    var ids = [];
    for (var i = 0; i < found.length; i++) { ids.push(found[i].getAttribute("data-card")); }
    return ids;
  }
  function bar() {
    var el = document.getElementById("changes");
    if (el) { return el; }
    el = document.createElement("div");
    el.id = "changes";
    el.setAttribute("role", "status");
    var button = document.createElement("button");
    button.type = "button";
    button.addEventListener("click", function () { show(); });
    el.appendChild(button);
    body.appendChild(el);
    return el;
  }
  function show() {
    var el = document.getElementById("changes");
    if (el) { el.remove(); }
    var fresh = pending;
    pending = null;
    var old = document.getElementById("main");
    if (fresh && old) { old.replaceWith(document.adoptNode(fresh)); } else { window.location.reload(); }
  }
  function freeze(old, fresh) {
    var now = cards(fresh);
    var shown = cards(old);
    var gone = shown.filter(function (id) { return now.indexOf(id) < 0; });
    var added = now.filter(function (id) { return shown.indexOf(id) < 0; });
    gone.forEach(function (id) {
      var card = old.querySelector('[data-card="' + id + '"]');
      if (!card) { return; }
      card.classList.add("gone");
      var buttons = card.querySelectorAll("button");
      for (var i = 0; i < buttons.length; i++) { buttons[i].disabled = true; }
    });
    pending = fresh;
    var n = gone.length + added.length;
    bar().firstChild.textContent = n + " changed — show";
    body.setAttribute("data-frozen", String(n));
  }
  function place(html) {
    var doc = new DOMParser().parseFromString(html, "text/html");
    var fresh = doc.getElementById("main");
    var old = document.getElementById("main");
    if (!fresh || !old) { return; }
    if (cards(old).join(",") !== cards(fresh).join(",")) { freeze(old, fresh); return; }
    if (pending) { pending = fresh; return; }
    if (!busy()) { old.replaceWith(document.adoptNode(fresh)); }
  }
  function refresh() {
    if (busy() && !document.querySelector("main [data-card]")) {
      say("live updates: the store changed (finish your note, then reload)");
      return;
    }
    fetch(window.location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { if (!r.ok || r.redirected) { throw new Error(String(r.status)); } return r.text(); })
      .then(function (html) {
        place(html);
        body.setAttribute("data-refreshed", String(Date.now()));
        say("live updates: refreshed " + new Date().toLocaleTimeString());
      })
      .catch(function () { say("live updates: refresh failed; reload the page"); });
  }
  var last = "";
  function poll() {
    fetch(url + "?once=1", { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) { if (!r.ok) { throw new Error(String(r.status)); } return r.json(); })
      .then(function (data) {
        badge(data);
        if (last && data.mark !== last) { refresh(); }
        last = data.mark;
        say("live updates: every " + (body.getAttribute("data-poll") || "10") + " s");
      })
      .catch(function () { say("live updates: unavailable; reload the page"); });
  }
  function polling() {
    poll();
    window.setInterval(poll, 1000 * Number(body.getAttribute("data-poll") || "10"));
  }
  if (!window.EventSource) { polling(); return; }
  var source = new EventSource(url);
  source.addEventListener("hello", function (ev) { badge(JSON.parse(ev.data)); say("live updates: on"); });
  source.addEventListener("change", function (ev) { badge(JSON.parse(ev.data)); refresh(); });
  source.onerror = function () {
    if (source.readyState === EventSource.CLOSED) { source.close(); polling(); return; }
    say("live updates: reconnecting…");
  };
})();
