// tickloop dashboard: live refresh over Server-Sent Events. The pages work without it.
// On a `change` event the approval badge is updated and the page's <main> is fetched again
// (same origin, our own server-rendered HTML); a form being filled in is never replaced.
(function () {
  "use strict";
  var body = document.body;
  var url = body.getAttribute("data-events");
  var state = document.getElementById("live-state");
  if (!url || !window.EventSource) { return; }
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
  function refresh() {
    if (busy()) { say("live updates: the store changed (finish your note, then reload)"); return; }
    fetch(window.location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { if (!r.ok || r.redirected) { throw new Error(String(r.status)); } return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("main");
        var old = document.getElementById("main");
        if (fresh && old && !busy()) { old.replaceWith(document.adoptNode(fresh)); }
        body.setAttribute("data-refreshed", String(Date.now()));
        say("live updates: refreshed " + new Date().toLocaleTimeString());
      })
      .catch(function () { say("live updates: refresh failed; reload the page"); });
  }
  var source = new EventSource(url);
  source.addEventListener("hello", function (ev) { badge(JSON.parse(ev.data)); say("live updates: on"); });
  source.addEventListener("change", function (ev) { badge(JSON.parse(ev.data)); refresh(); });
  source.onerror = function () { say("live updates: reconnecting…"); };
})();
