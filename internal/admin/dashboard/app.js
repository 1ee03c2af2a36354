// usher dashboard: live charts of every room over GET /api/v1/live, and
// the controls of queue_all, suspended and the two limits over PATCH
// /api/v1/rooms/{id}. The admin token is kept in this tab (sessionStorage)
// and sent only in the Authorization header of calls to this listener.
(function () {
  "use strict";

  var KEY = "usher.admin.token";
  var MAX_SAMPLES = 600; // ten minutes at one snapshot a second
  var MIN_SPAN = 60 * 1000; // the charts show at least a minute
  var WAIT_EVERY = 30 * 1000; // how often the wait percentiles are read
  var WAIT_SPAN = 30 * 60 * 1000; // over the last half hour
  var RECONNECT = 2000;
  var MAX_BUFFER = 1 << 20; // a stream message larger than this ends it

  var token = "";
  var role = "";
  var stream = null; // the AbortController of the live stream
  var rooms = {}; // id -> room state
  var waitTimer = 0;
  var connState = "";
  var pending = null; // the change the dialog asks about

  function $(id) { return document.getElementById(id); }

  function el(tag, attrs, text) {
    var n = document.createElement(tag);
    if (attrs) { Object.keys(attrs).forEach(function (k) { n.setAttribute(k, attrs[k]); }); }
    if (text !== undefined) { n.textContent = text; }
    return n;
  }

  var SVG = "http://www.w3.org/2000/svg";
  function sv(tag, attrs, text) {
    var n = document.createElementNS(SVG, tag);
    if (attrs) { Object.keys(attrs).forEach(function (k) { n.setAttribute(k, attrs[k]); }); }
    if (text !== undefined) { n.textContent = text; }
    return n;
  }

  function num(n) { return typeof n === "number" ? n.toLocaleString("en-US") : "–"; }

  function utc(t) {
    var d = new Date(t);
    if (isNaN(d.getTime())) { return "?"; }
    return d.toISOString().slice(0, 16).replace("T", " ") + " UTC";
  }

  function rfc3339(t) { return new Date(t).toISOString().replace(/\.\d+Z$/, "Z"); }

  function clock(t) { return new Date(t).toISOString().slice(11, 19) + " UTC"; }

  // api calls the admin API with the token in the Authorization header.
  function api(method, path, body, etag) {
    var headers = { "Authorization": "Bearer " + token, "Accept": "application/json" };
    var init = { method: method, headers: headers, cache: "no-store", credentials: "omit", redirect: "error" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    if (etag) { headers["If-Match"] = etag; }
    return fetch(path, init).then(function (res) {
      return res.text().then(function (text) {
        var data = null;
        try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
        return { status: res.status, ok: res.ok, data: data, etag: res.headers.get("ETag") };
      });
    });
  }

  // errorText is the API's error: its field, then its message.
  function errorText(r) {
    var e = r.data && r.data.error;
    if (!e) { return "HTTP " + r.status; }
    var s = e.message || e.code || ("HTTP " + r.status);
    if (e.field) { s = "Field " + e.field + ": " + s; }
    return s;
  }

  function setConn(s) {
    if (s === connState) { return; }
    connState = s;
    $("conn").textContent = s;
  }

  // ---- login ----

  function login(t) {
    token = t;
    return api("GET", "/api/v1/whoami").then(function (r) {
      if (r.status === 401) { throw new Error("The token was refused."); }
      if (!r.ok || !r.data) { throw new Error(errorText(r)); }
      role = r.data.role;
      try { sessionStorage.setItem(KEY, token); } catch (e) { /* kept in memory only */ }
      $("who").textContent = "Token " + r.data.name + " (" + role + ")";
      showDashboard();
    }, function () {
      throw new Error("The admin listener cannot be reached.");
    }).catch(function (err) {
      token = "";
      throw err;
    });
  }

  function logout(why) {
    token = "";
    role = "";
    try { sessionStorage.removeItem(KEY); } catch (e) { /* nothing kept */ }
    if (stream) { stream.abort(); stream = null; }
    clearInterval(waitTimer);
    Object.keys(rooms).forEach(function (id) { rooms[id].node.remove(); });
    rooms = {};
    if ($("confirm").open) { $("confirm").close(); }
    $("dash").hidden = true;
    $("who").hidden = true;
    $("logout").hidden = true;
    $("login-box").hidden = false;
    $("login-error").textContent = why || "";
    setConn("");
    $("token").focus();
  }

  function showDashboard() {
    $("login-box").hidden = true;
    $("dash").hidden = false;
    $("who").hidden = false;
    $("logout").hidden = false;
    $("readonly").hidden = role === "write";
    connect();
    clearInterval(waitTimer);
    waitTimer = setInterval(function () {
      Object.keys(rooms).forEach(function (id) { readWaits(rooms[id]); });
    }, WAIT_EVERY);
  }

  // ---- the live stream ----

  function connect() {
    var ctl = new AbortController();
    if (stream) { stream.abort(); }
    stream = ctl;
    setConn("Connecting…");
    fetch("/api/v1/live", {
      headers: { "Authorization": "Bearer " + token, "Accept": "text/event-stream" },
      cache: "no-store", credentials: "omit", redirect: "error", signal: ctl.signal
    }).then(function (res) {
      if (res.status === 401) { logout("The token is no longer accepted."); return undefined; }
      if (!res.ok || !res.body) { throw new Error("HTTP " + res.status); }
      setConn("Live");
      var reader = res.body.getReader();
      var dec = new TextDecoder();
      var buf = "";
      function pump() {
        return reader.read().then(function (x) {
          if (x.done) { throw new Error("the stream ended"); }
          buf += dec.decode(x.value, { stream: true });
          var i;
          while ((i = buf.indexOf("\n\n")) >= 0) {
            message(buf.slice(0, i));
            buf = buf.slice(i + 2);
          }
          if (buf.length > MAX_BUFFER) { throw new Error("a message too large"); }
          return pump();
        });
      }
      return pump();
    }).catch(function () {
      if (ctl.signal.aborted || stream !== ctl) { return; }
      setConn("Disconnected, reconnecting…");
      setTimeout(function () { if (stream === ctl && token) { connect(); } }, RECONNECT);
    });
  }

  // message handles one server-sent event.
  function message(block) {
    var ev = "message";
    var data = [];
    block.split("\n").forEach(function (line) {
      if (line === "" || line.charAt(0) === ":") { return; }
      var c = line.indexOf(":");
      var field = c < 0 ? line : line.slice(0, c);
      var value = c < 0 ? "" : line.slice(c + 1);
      if (value.charAt(0) === " ") { value = value.slice(1); }
      if (field === "event") { ev = value; } else if (field === "data") { data.push(value); }
    });
    if (ev !== "snapshot" || data.length === 0) { return; }
    var snap;
    try { snap = JSON.parse(data.join("\n")); } catch (e) { return; }
    render(snap);
  }

  function render(snap) {
    var t = Date.parse(snap.time);
    var seen = {};
    (snap.rooms || []).forEach(function (r) {
      seen[r.id] = true;
      var st = rooms[r.id];
      if (!st) {
        st = makeRoom(r);
        rooms[r.id] = st;
        $("rooms").appendChild(st.node);
        readWaits(st);
      }
      st.samples.push({
        t: t, active: r.active, tau: r.total_active_users, adm: r.admitted_last_minute,
        nupm: r.new_users_per_minute, waiting: r.waiting
      });
      if (st.samples.length > MAX_SAMPLES) { st.samples.shift(); }
      st.last = r;
      updateRoom(st);
    });
    Object.keys(rooms).forEach(function (id) {
      if (!seen[id]) { rooms[id].node.remove(); delete rooms[id]; }
    });
    $("updated").textContent = "Updated " + clock(t);
  }

  // ---- a room's card ----

  var CHARTS = [
    { key: "active", title: "Active users", series: [
      { key: "active", label: "active", cls: "active" },
      { key: "tau", label: "total_active_users", cls: "limit", dashed: true }] },
    { key: "admissions", title: "Admissions in the last minute", series: [
      { key: "adm", label: "admitted", cls: "admit" },
      { key: "nupm", label: "new_users_per_minute", cls: "limit", dashed: true }] },
    { key: "waiting", title: "Waiting", series: [
      { key: "waiting", label: "live waiters", cls: "wait" }] },
    { key: "wait", title: "Wait before admission (s)", series: [
      { key: "p50", label: "p50", cls: "active" },
      { key: "p95", label: "p95", cls: "p95", dashed: true }] }
  ];

  function makeRoom(r) {
    var id = r.id;
    var hid = "room-" + id + "-h";
    var node = el("section", { "class": "room", "data-room": id, "aria-labelledby": hid });
    var head = el("div", { "class": "room-head" });
    head.appendChild(el("h2", { id: hid }, r.name || r.id));
    head.appendChild(el("span", { "class": "rid" }, r.id));
    var badges = el("span", { "class": "badges" });
    head.appendChild(badges);
    node.appendChild(head);
    var ev = el("p", { "class": "event" });
    node.appendChild(ev);

    var figs = el("dl", { "class": "figures" });
    var fig = {};
    [["active", "Active"], ["admissions", "Admitted, last minute"], ["waiting", "Waiting"],
      ["slots", "Free slots"], ["method", "Method"]].forEach(function (f) {
      var d = el("div");
      d.appendChild(el("dt", null, f[1]));
      fig[f[0]] = el("dd", { "data-figure": f[0] });
      d.appendChild(fig[f[0]]);
      figs.appendChild(d);
    });
    node.appendChild(figs);

    var charts = el("div", { "class": "charts" });
    var ch = {};
    CHARTS.forEach(function (c) {
      var cid = "room-" + id + "-" + c.key;
      var f = el("figure", { "class": "chart" });
      var cap = el("figcaption", { id: cid });
      cap.appendChild(el("h3", null, c.title));
      c.series.forEach(function (s) {
        var l = el("span", { "class": "legend c-" + s.cls });
        l.appendChild(el("span", { "class": "swatch" + (s.dashed ? " dashed" : ""), "aria-hidden": "true" }));
        l.appendChild(document.createTextNode(s.label));
        cap.appendChild(l);
      });
      f.appendChild(cap);
      var svg = sv("svg", {
        "class": "plot", viewBox: "0 0 " + W + " " + H, role: "img", "aria-labelledby": cid,
        "data-chart": c.key, "data-samples": "0"
      });
      f.appendChild(svg);
      charts.appendChild(f);
      ch[c.key] = { def: c, svg: svg };
    });
    node.appendChild(charts);

    var controls = el("div", { "class": "controls", role: "group", "aria-label": "Controls of " + (r.name || r.id) });
    var qa = el("button", { type: "button", "data-control": "queue_all", "aria-pressed": "false" }, "Queue all");
    var su = el("button", { type: "button", "data-control": "suspended", "aria-pressed": "false" }, "Suspend");
    qa.addEventListener("click", function () { toggle(st, "queue_all", qa); });
    su.addEventListener("click", function () { toggle(st, "suspended", su); });
    controls.appendChild(qa);
    controls.appendChild(su);
    var inputs = {};
    [["total_active_users", "total_active_users (active users)"],
      ["new_users_per_minute", "new_users_per_minute (admissions a minute)"]].forEach(function (f) {
      var iid = "room-" + id + "-" + f[0];
      var box = el("div", { "class": "limit" });
      box.appendChild(el("label", { "for": iid }, f[1]));
      var row = el("div");
      var input = el("input", { id: iid, type: "number", min: "1", step: "1", inputmode: "numeric", "data-limit": f[0] });
      var b = el("button", {
        type: "button", "class": "secondary", "data-apply": f[0],
        "aria-label": "Apply… " + f[0] + " of " + (r.name || r.id)
      }, "Apply…");
      b.addEventListener("click", function () { setLimit(st, f[0], input, b); });
      input.addEventListener("keydown", function (e) { if (e.key === "Enter") { e.preventDefault(); setLimit(st, f[0], input, b); } });
      row.appendChild(input);
      row.appendChild(b);
      box.appendChild(row);
      controls.appendChild(box);
      inputs[f[0]] = input;
    });
    var msg = el("p", { "class": "msg note", role: "status" });
    controls.appendChild(msg);
    node.appendChild(controls);
    if (role !== "write") {
      controls.querySelectorAll("button, input").forEach(function (c) {
        c.disabled = true;
        c.setAttribute("aria-describedby", "readonly");
      });
    }

    var st = {
      id: id, node: node, badges: badges, ev: ev, fig: fig, charts: ch, qa: qa, su: su,
      inputs: inputs, msg: msg, samples: [], waits: null, last: r, filled: false
    };
    return st;
  }

  function updateRoom(st) {
    var r = st.last;
    st.badges.textContent = "";
    if (r.queue_all) { st.badges.appendChild(el("span", { "class": "badge queue-all" }, "QUEUE ALL")); }
    if (r.suspended) { st.badges.appendChild(el("span", { "class": "badge suspended" }, "SUSPENDED")); }
    if (r.phase === "event") { st.badges.appendChild(el("span", { "class": "badge phase" }, "EVENT")); }
    if (r.phase === "prequeue") { st.badges.appendChild(el("span", { "class": "badge phase" }, "PRE-QUEUE")); }
    if (r.error) { st.badges.appendChild(el("span", { "class": "badge err" }, r.error)); }
    st.ev.textContent = eventText(r);

    st.fig.active.textContent = num(r.active) + " / " + num(r.total_active_users);
    st.fig.admissions.textContent = num(r.admitted_last_minute) + " / " + num(r.new_users_per_minute);
    st.fig.waiting.textContent = num(r.waiting);
    st.fig.slots.textContent = num(r.slots);
    st.fig.method.textContent = r.queueing_method;

    st.qa.setAttribute("aria-pressed", r.queue_all ? "true" : "false");
    st.qa.textContent = r.queue_all ? "Queue all: on" : "Queue all: off";
    st.su.setAttribute("aria-pressed", r.suspended ? "true" : "false");
    st.su.textContent = r.suspended ? "Suspended: on" : "Suspended: off";
    if (!st.filled) {
      st.inputs.total_active_users.value = r.total_active_users;
      st.inputs.new_users_per_minute.value = r.new_users_per_minute;
      st.filled = true;
    }

    var s = st.samples;
    plot(st.charts.active, s, s.length ? s[s.length - 1].t : 0);
    plot(st.charts.admissions, s, s.length ? s[s.length - 1].t : 0);
    plot(st.charts.waiting, s, s.length ? s[s.length - 1].t : 0);
  }

  function eventText(r) {
    var e = r.event;
    if (e && r.phase === "event") {
      return "Event “" + e.name + "” running until " + utc(e.event_end_time) + ".";
    }
    if (e && r.phase === "prequeue") {
      return "Event “" + e.name + "”: pre-queue open, starts " + utc(e.event_start_time) + ".";
    }
    var n = r.next_event;
    if (n) {
      var s = "Next event: “" + n.name + "”, " + utc(n.event_start_time) + " to " + utc(n.event_end_time);
      if (n.prequeue_start_time) { s += ", pre-queue from " + utc(n.prequeue_start_time); }
      return s + ".";
    }
    return "No event scheduled.";
  }

  // ---- charts ----

  var W = 320, H = 140, PL = 40, PR = 8, PT = 10, PB = 20;

  function niceMax(v) {
    if (!(v > 0)) { return 1; }
    var p = Math.pow(10, Math.floor(Math.log(v) / Math.LN10));
    var steps = [1, 2, 2.5, 5, 10];
    for (var i = 0; i < steps.length; i++) {
      if (steps[i] * p >= v) { return steps[i] * p; }
    }
    return 10 * p;
  }

  function spanText(ms) {
    var s = Math.round(ms / 1000);
    return s < 120 ? s + " s" : Math.round(s / 60) + " min";
  }

  // plot draws samples ({t, key: value}) on a chart, the newest at now.
  function plot(c, samples, now, emptyText) {
    var svg = c.svg;
    while (svg.firstChild) { svg.removeChild(svg.firstChild); }
    svg.setAttribute("data-samples", String(samples.length));
    var x0 = PL, x1 = W - PR, y0 = H - PB, y1 = PT;
    svg.appendChild(sv("line", { "class": "grid", x1: x0, y1: y0, x2: x1, y2: y0 }));
    svg.appendChild(sv("line", { "class": "grid", x1: x0, y1: y1, x2: x1, y2: y1 }));
    svg.appendChild(sv("line", { "class": "grid", x1: x0, y1: (y0 + y1) / 2, x2: x1, y2: (y0 + y1) / 2 }));
    if (samples.length === 0) {
      svg.appendChild(sv("text", { "class": "empty", x: (x0 + x1) / 2, y: (y0 + y1) / 2 + 4, "text-anchor": "middle" },
        emptyText || "waiting for data…"));
      return;
    }
    var first = samples[0].t;
    var span = Math.max(now - first, MIN_SPAN);
    var start = now - span;
    var top = 0;
    c.def.series.forEach(function (s) {
      samples.forEach(function (p) { if (typeof p[s.key] === "number" && p[s.key] > top) { top = p[s.key]; } });
    });
    top = niceMax(top * 1.05);
    svg.appendChild(sv("text", { x: x0 - 4, y: y1 + 4, "text-anchor": "end" }, num(top)));
    svg.appendChild(sv("text", { x: x0 - 4, y: (y0 + y1) / 2 + 4, "text-anchor": "end" }, num(top / 2)));
    svg.appendChild(sv("text", { x: x0 - 4, y: y0 + 4, "text-anchor": "end" }, "0"));
    svg.appendChild(sv("text", { x: x0, y: H - 4 }, "−" + spanText(span)));
    svg.appendChild(sv("text", { x: x1, y: H - 4, "text-anchor": "end" }, "now"));
    c.def.series.forEach(function (s) {
      var pts = [];
      var max = 0;
      samples.forEach(function (p) {
        var v = p[s.key];
        if (typeof v !== "number") { return; }
        if (v > max) { max = v; }
        var x = x0 + (x1 - x0) * (p.t - start) / span;
        var y = y0 - (y0 - y1) * v / top;
        pts.push(x.toFixed(1) + "," + y.toFixed(1));
      });
      if (pts.length === 1) { pts.push(pts[0]); }
      svg.appendChild(sv("polyline", {
        "class": "s-" + s.cls + (s.dashed ? " dashed" : ""), points: pts.join(" "),
        "data-series": s.key, "data-points": String(pts.length), "data-max": String(max)
      }));
    });
  }

  // readWaits reads the room's wait percentiles for the last half hour.
  function readWaits(st) {
    if (!token) { return; }
    var now = Date.now();
    var q = "?from=" + encodeURIComponent(rfc3339(now - WAIT_SPAN)) +
      "&to=" + encodeURIComponent(rfc3339(now)) + "&step=minute";
    var c = st.charts.wait;
    api("GET", "/api/v1/rooms/" + encodeURIComponent(st.id) + "/analytics" + q).then(function (r) {
      if (r.status === 404) {
        c.svg.setAttribute("data-state", "none");
        plot(c, [], now, "no wait data yet");
        return;
      }
      if (!r.ok || !r.data) {
        c.svg.setAttribute("data-state", "error");
        plot(c, [], now, "wait data unavailable: " + errorText(r));
        return;
      }
      var pts = [];
      (r.data.points || []).forEach(function (p) {
        var w = p.queue_wait_seconds;
        var t = typeof p.t === "number" ? p.t * 1000 : Date.parse(p.t);
        if (!w || isNaN(t) || w.count === 0) { return; } // a minute with nobody admitted
        if (typeof w.p50 !== "number" && typeof w.p95 !== "number") { return; }
        pts.push({ t: t, p50: w.p50, p95: w.p95 });
      });
      c.svg.setAttribute("data-state", pts.length ? "data" : "none");
      plot(c, pts, now, "no wait data yet");
    }, function () {
      c.svg.setAttribute("data-state", "error");
      plot(c, [], now, "wait data unavailable");
    });
  }

  // ---- changes ----

  function toggle(st, field, button) {
    var now = st.last[field] === true;
    ask(st, field, !now, button);
  }

  function setLimit(st, field, input, button) {
    var raw = input.value.trim();
    // A whole number goes as a number; anything else goes as typed, and
    // the API says what is wrong with it.
    var v = /^-?\d+$/.test(raw) ? parseInt(raw, 10) : raw;
    ask(st, field, v, button);
  }

  // ask reads the room (its settings and ETag), then shows the change for
  // confirmation.
  function ask(st, field, after, control) {
    st.msg.textContent = "";
    api("GET", "/api/v1/rooms/" + encodeURIComponent(st.id)).then(function (r) {
      if (!r.ok || !r.data) { st.msg.textContent = "Cannot read the room: " + errorText(r); return; }
      var room = r.data;
      var before = room.settings ? room.settings[field] : undefined;
      pending = { st: st, field: field, before: before, after: after, etag: r.etag || room.etag, control: control };
      $("confirm-what").textContent = "Room " + (st.last.name || st.id) + " (" + st.id + "): set " + field + ".";
      $("confirm-field").textContent = field;
      $("confirm-before").textContent = JSON.stringify(before);
      $("confirm-after").textContent = JSON.stringify(after);
      $("confirm-note").textContent = eventNote(room, st.last, field);
      $("confirm-error").textContent = "";
      $("confirm-apply").disabled = false;
      $("confirm").showModal();
      $("confirm-cancel").focus();
    }, function () {
      st.msg.textContent = "The admin listener cannot be reached.";
    });
  }

  // eventNote says when an event in force sets the field itself (its value
  // wins while it runs).
  function eventNote(room, live, field) {
    if (!live.event || live.phase === "none" || !room.events) { return ""; }
    var evs = room.events.events || [];
    for (var i = 0; i < evs.length; i++) {
      if (evs[i].name === live.event.name && evs[i][field] !== undefined) {
        return "Event “" + live.event.name + "” sets " + field + " to " + JSON.stringify(evs[i][field]) +
          " while it runs; its value stays in force until it ends.";
      }
    }
    return "";
  }

  function closeDialog() {
    var p = pending;
    pending = null;
    if ($("confirm").open) { $("confirm").close(); }
    if (p && p.control && !p.control.disabled) { p.control.focus(); }
  }

  function apply() {
    var p = pending;
    if (!p) { return; }
    $("confirm-apply").disabled = true;
    var body = {};
    body[p.field] = p.after;
    api("PATCH", "/api/v1/rooms/" + encodeURIComponent(p.st.id), body, p.etag).then(function (r) {
      if (!r.ok) {
        var s = errorText(r);
        if (r.status === 412) { s += " Cancel and try again to see the room as it is now."; }
        $("confirm-error").textContent = "Refused, nothing changed. " + s;
        return;
      }
      p.st.msg.textContent = p.field + ": " + JSON.stringify(p.before) + " → " + JSON.stringify(p.after) + " applied.";
      closeDialog();
    }, function () {
      $("confirm-error").textContent = "The admin listener cannot be reached; nothing was sent.";
      $("confirm-apply").disabled = false;
    });
  }

  // ---- start ----

  document.addEventListener("DOMContentLoaded", function () {
    var upd = el("p", { id: "updated", "class": "note" });
    $("conn").after(upd);
    $("login").addEventListener("submit", function (e) {
      e.preventDefault();
      var t = $("token").value.trim();
      if (!t) { $("login-error").textContent = "Enter a token."; return; }
      $("login-submit").disabled = true;
      $("login-error").textContent = "";
      login(t).then(function () {
        $("token").value = "";
      }, function (err) {
        $("login-error").textContent = err.message;
        $("token").focus();
      }).then(function () { $("login-submit").disabled = false; });
    });
    $("logout").addEventListener("click", function () { logout(""); });
    $("confirm-cancel").addEventListener("click", closeDialog);
    $("confirm-apply").addEventListener("click", apply);
    $("confirm").addEventListener("cancel", function (e) { e.preventDefault(); closeDialog(); });
    var saved = "";
    try { saved = sessionStorage.getItem(KEY) || ""; } catch (e) { saved = ""; }
    if (saved) {
      login(saved).catch(function (err) { logout(err.message); });
    } else {
      $("token").focus();
    }
  });
}());
