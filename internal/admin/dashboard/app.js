// usher dashboard: live charts of every room over GET /api/v1/live; the
// quick controls (queue_all, suspended, the two limits) and an editor of
// every room setting, event and rule over the admin API (each write
// confirmed, sent with If-Match); the audit log. The admin token is kept in this tab (sessionStorage)
// and sent only in the Authorization header of calls to this listener.
(function () {
  "use strict";

  var KEY = "usher.admin.token";
  var MAX_SAMPLES = 600; // ten minutes at one snapshot a second
  var MIN_SPAN = 60 * 1000; // the charts show at least a minute
  var WAIT_EVERY = 30 * 1000; // how often the wait percentiles are read
  var WAIT_SPAN = 30 * 60 * 1000; // over the last half hour
  var HISTORY_SPAN = 60 * 60 * 1000; // the charts open with the last hour
  var MINUTE = 60 * 1000;
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
    $("audit-rows").textContent = "";
    $("audit-more").hidden = true;
    auditNext = 0;
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
    loadAudit(false);
    api("GET", "/api/v1/overrides").then(function (r) {
      var o = r.ok && r.data && r.data.orphans;
      $("orphans").hidden = !(o && o.length);
      $("orphans").textContent = o && o.length ? "Runtime overrides are kept for rooms the config file does not have (applied to nothing): " +
        o.join(", ") + ". A room of that id added to the file gets them." : "";
    }, function () { /* the rooms' own views say the rest */ });
    clearInterval(waitTimer);
    waitTimer = setInterval(function () {
      Object.keys(rooms).forEach(function (id) { readAnalytics(rooms[id]); });
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
        readAnalytics(st);
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
      inputs: inputs, msg: msg, samples: [], history: [], waits: null, last: r, filled: false
    };
    node.appendChild(makeManage(st));
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

    replot(st);
  }

  // replot draws the live charts: the minutes of the analytics from before
  // the oldest snapshot (the hour before the page opened, then whatever
  // the snapshots kept no longer cover), and the snapshots.
  function replot(st) {
    var s = st.samples;
    var now = s.length ? s[s.length - 1].t : Date.now();
    var cut = s.length ? s[0].t : now;
    var h = st.history.filter(function (p) { return p.t < cut && p.t > now - HISTORY_SPAN; });
    var all = h.concat(s);
    plot(st.charts.active, all, now, "", h.length);
    plot(st.charts.admissions, all, now, "", h.length);
    plot(st.charts.waiting, all, now, "", h.length);
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

  // plot draws samples ({t, key: value}) on a chart, the newest at now;
  // the first history of them come from the analytics (data-history).
  function plot(c, samples, now, emptyText, history) {
    var svg = c.svg;
    while (svg.firstChild) { svg.removeChild(svg.firstChild); }
    svg.setAttribute("data-samples", String(samples.length));
    svg.setAttribute("data-history", String(history || 0));
    svg.setAttribute("data-first", samples.length ? String(samples[0].t) : "");
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

  // readAnalytics reads the room's analytics of the last hour, minute by
  // minute: the wait percentiles of the last half hour, and the history
  // the live charts open with (each minute's peak active and waiting
  // users and its admissions, drawn at the minute's end).
  function readAnalytics(st) {
    if (!token) { return; }
    var now = Date.now();
    var q = "?from=" + encodeURIComponent(rfc3339(now - HISTORY_SPAN)) +
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
      var pts = [], hist = [];
      (r.data.points || []).forEach(function (p) {
        var w = p.queue_wait_seconds;
        var t = typeof p.t === "number" ? p.t * 1000 : Date.parse(p.t);
        if (isNaN(t)) { return; }
        hist.push({ t: t + MINUTE, active: p.peak_active, adm: p.admissions, waiting: p.peak_waiting });
        if (t < now - WAIT_SPAN) { return; }
        if (!w || w.count === 0) { return; } // a minute with nobody admitted
        if (typeof w.p50 !== "number" && typeof w.p95 !== "number") { return; }
        pts.push({ t: t, p50: w.p50, p95: w.p95 });
      });
      st.history = hist;
      replot(st);
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
    api("GET", roomPath(st)).then(function (r) {
      if (!r.ok || !r.data) { st.msg.textContent = "Cannot read the room: " + errorText(r); return; }
      var room = r.data;
      var before = room.settings ? room.settings[field] : undefined;
      var body = {};
      body[field] = after;
      // Back to the config file's value: the override is dropped, not
      // set to it, so that the room follows its file again.
      var ov = room.overrides ? room.overrides[field] : undefined;
      if (ov && canon(ov.file) === canon(after)) { body[field] = null; }
      confirmChange({
        what: "Room " + (st.last.name || st.id) + " (" + st.id + "): set " + field + ".",
        rows: [[field, before, after]],
        note: eventNote(room, st.last, field),
        control: control,
        send: function () { return api("PATCH", roomPath(st), body, r.etag || room.etag); },
        done: function () {
          st.msg.textContent = field + ": " + JSON.stringify(before) + " → " + JSON.stringify(after) + " applied.";
          changed(st);
        }
      });
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

  // show writes a value for the dialog and the tables: JSON, or "(not
  // set)".
  function show(v) { return v === undefined || v === null ? "(not set)" : JSON.stringify(v); }

  // confirmChange asks before a write: c.what says what changes, c.rows
  // are [field, before, after], c.note an optional remark; Apply calls
  // c.send() (a promise of an API answer) and, on success, c.done(answer).
  // A refusal stays in the dialog with the API's error; nothing else on
  // the page changes.
  function confirmChange(c) {
    pending = c;
    $("confirm-what").textContent = c.what;
    var tb = $("confirm-rows");
    tb.textContent = "";
    c.rows.forEach(function (row) {
      var tr = el("tr");
      tr.appendChild(el("th", { scope: "row" }, row[0]));
      tr.appendChild(el("td", null, show(row[1])));
      tr.appendChild(el("td", null, show(row[2])));
      tb.appendChild(tr);
    });
    $("confirm-note").textContent = c.note || "";
    $("confirm-error").textContent = "";
    $("confirm-apply").disabled = false;
    $("confirm").showModal();
    $("confirm-cancel").focus();
  }

  function closeDialog() {
    var p = pending;
    pending = null;
    if ($("confirm").open) { $("confirm").close(); }
    if (p && p.control && p.control.isConnected && !p.control.disabled) { p.control.focus(); }
  }

  function apply() {
    var p = pending;
    if (!p) { return; }
    $("confirm-apply").disabled = true;
    p.send().then(function (r) {
      if (pending !== p) { return; }
      if (!r.ok) {
        var s = errorText(r).replace(/\.?$/, ".");
        if (r.status === 403) { s += " This token may only read."; }
        if (r.status === 412) { s += " Cancel, Reload, and try again to see the room as it is now."; }
        $("confirm-error").textContent = "Refused, nothing changed. " + s;
        return;
      }
      closeDialog();
      if (p.done) { p.done(r); }
    }, function () {
      if (pending !== p) { return; }
      $("confirm-error").textContent = "The admin listener cannot be reached; the change may not have been made.";
      $("confirm-apply").disabled = false;
    });
  }

  function roomPath(st) { return "/api/v1/rooms/" + encodeURIComponent(st.id); }

  // changed reads a room again after a change, and the audit log.
  function changed(st) {
    if (st.manageOpen()) { loadRoom(st); }
    loadAudit(false);
  }

  // canon is a value's JSON with its objects' keys sorted, to compare.
  function canon(v) {
    if (v === undefined) { return "undefined"; }
    if (v === null || typeof v !== "object") { return JSON.stringify(v); }
    if (Array.isArray(v)) { return "[" + v.map(canon).join(",") + "]"; }
    return "{" + Object.keys(v).sort().map(function (k) { return JSON.stringify(k) + ":" + canon(v[k]); }).join(",") + "}";
  }

  // ---- a room's settings, events and rules ----

  // The room settings the editor has fields for, by group, as PATCH
  // /api/v1/rooms/{id} names them. t: int, num, bool, dur, text, select
  // (o: the choices, num: sent as a number), json. opt: may be left unset
  // (empty leaves it as it is). A group with obj edits that block of the
  // room as a whole (its fields are the block's keys).
  var GROUPS = [
    { id: "limits", title: "Limits and switches", fields: [
      { k: "total_active_users", t: "int", help: "the most admitted visitors active at once" },
      { k: "new_users_per_minute", t: "int", help: "the most admissions in any 60 s" },
      { k: "queue_all", t: "bool", help: "nobody new is admitted" },
      { k: "suspended", t: "bool", help: "the room is off: requests pass untouched" }] },
    { id: "queueing", title: "Queueing", fields: [
      { k: "queueing_method", t: "select", o: ["fifo", "random", "passthrough", "reject"] },
      { k: "queueing_status_code", t: "select", o: ["200", "202", "429", "503"], num: true, opt: true },
      { k: "json_response_enabled", t: "bool" }] },
    { id: "session", title: "Session", fields: [
      { k: "session_duration", t: "dur", help: "like 5m; at least 10s" },
      { k: "disable_session_renewal", t: "bool" }] },
    { id: "refresh", title: "Check-ins", fields: [
      { k: "refresh_interval", t: "dur", help: "1s to 5m" },
      { k: "max_refresh_interval", t: "dur", opt: true, help: "1s to 5m, at least refresh_interval" }] },
    { id: "cookie", title: "Cookie", fields: [
      { k: "cookie_suffix", t: "text" },
      { k: "cookie_attributes.samesite", t: "select", o: ["", "auto", "lax", "strict", "none"] },
      { k: "cookie_attributes.secure", t: "select", o: ["", "auto", "always", "never"] }] },
    { id: "pages", title: "Pages", fields: [
      { k: "name", t: "text", help: "shown to visitors" },
      { k: "custom_page_html", t: "text", opt: true, help: "a template's path, relative to the config file" },
      { k: "default_template_language", t: "text", opt: true, help: "like en-US" }] },
    { id: "routing", title: "Routing", fields: [
      { k: "origin", t: "text", opt: true },
      { k: "routes", t: "json", help: "a JSON list like [{\"path\": \"/\"}]" },
      { k: "path_case_sensitive", t: "bool" }] },
    { id: "client_limit", title: "Client limit", obj: "client_limit", fields: [
      { k: "new_visitors_per_minute", t: "int", opt: true, help: "1 to 60000; turns the limit on" },
      { k: "ipv4_prefix", t: "int", opt: true },
      { k: "ipv6_prefix", t: "int", opt: true },
      { k: "network_new_visitors_per_minute", t: "int", opt: true, help: "all the clients of one network together; empty: 4 times the client's" },
      { k: "network_ipv4_prefix", t: "int", opt: true, help: "empty: 24" },
      { k: "network_ipv6_prefix", t: "int", opt: true, help: "empty: 48" },
      { k: "over_limit", t: "select", o: ["", "queue", "reject"], opt: true }] },
    { id: "proof_of_work", title: "Proof of work", obj: "proof_of_work", fields: [
      { k: "difficulty", t: "int", opt: true, help: "1 to 32; turns it on" },
      { k: "always", t: "bool" }] },
    { id: "ticket_binding", title: "Ticket binding", obj: "ticket_binding", fields: [
      { k: "client_prefix", t: "bool" },
      { k: "user_agent", t: "bool" },
      { k: "ipv4_prefix", t: "int", opt: true },
      { k: "ipv6_prefix", t: "int", opt: true }] },
    { id: "autopilot", title: "Autopilot", obj: "autopilot", fields: [
      { k: "enabled", t: "bool", def: true },
      { k: "min_new_users_per_minute", t: "int", opt: true },
      { k: "max_new_users_per_minute", t: "int", opt: true },
      { k: "concurrency", t: "bool" },
      { k: "min_total_active_users", t: "int", opt: true },
      { k: "max_total_active_users", t: "int", opt: true },
      { k: "latency_percentile", t: "select", o: ["", "50", "90", "95", "99"], num: true, opt: true },
      { k: "latency_sigma", t: "num", opt: true },
      { k: "latency_factor", t: "num", opt: true },
      { k: "latency_target", t: "dur", opt: true },
      { k: "error_target", t: "num", opt: true },
      { k: "baseline_samples", t: "int", opt: true },
      { k: "decrease", t: "num", opt: true },
      { k: "recover", t: "num", opt: true },
      { k: "max_changes_per_minute", t: "int", opt: true },
      { k: "health_url", t: "text", opt: true },
      { k: "probe_interval", t: "dur", opt: true },
      { k: "probe_timeout", t: "dur", opt: true }] }
  ];

  // The event fields the event form has fields for; any other override
  // goes in its JSON field.
  var EVENT_FIELDS = [
    { k: "name", t: "text" },
    { k: "prequeue_start_time", t: "text", opt: true, help: "UTC, like 2026-12-01T17:45:00Z" },
    { k: "event_start_time", t: "text", help: "UTC, like 2026-12-01T18:00:00Z" },
    { k: "event_end_time", t: "text", help: "UTC" },
    { k: "shuffle_at_event_start", t: "bool" },
    { k: "total_active_users", t: "int", opt: true, help: "empty: the room's" },
    { k: "new_users_per_minute", t: "int", opt: true, help: "empty: the room's" },
    { k: "queueing_method", t: "select", o: ["", "fifo", "random", "passthrough", "reject"], opt: true },
    { k: "session_duration", t: "dur", opt: true, help: "empty: the room's" },
    { k: "queue_all", t: "select", o: ["", "true", "false"], bool: true, opt: true }
  ];

  var RULE_FIELDS = [
    { k: "description", t: "text", opt: true },
    { k: "expression", t: "text", help: "CEL, like path.startsWith(\"/health\")" },
    { k: "action", t: "select", o: ["bypass_waiting_room"] },
    { k: "enabled", t: "bool" }
  ];

  var WEBHOOK_EVENTS = "queueing.*, room.*, event.*, breaker.*, summary.minute, autopilot.changed, visitor.*";

  // makeManage adds the room's settings, events and rules panels, read
  // from the API when one is opened.
  function makeManage(st) {
    var box = el("div", { "class": "manage" });
    st.manage = box;
    st.panels = {};
    [["settings", "Settings"], ["events", "Events"], ["rules", "Rules"]].forEach(function (p) {
      var d = el("details", { "class": "panel", "data-panel": p[0] });
      d.appendChild(el("summary", null, p[1] + " of " + (st.last.name || st.id)));
      var body = el("div", { "class": "panel-body" });
      d.appendChild(body);
      // A panel opened while the others are closed reads the room; one
      // opened beside an open one shows what was read (Reload, or any
      // change made here, reads it again).
      d.addEventListener("toggle", function () {
        if (!d.open) { return; }
        var others = Object.keys(st.panels).filter(function (k) { return st.panels[k].details !== d && st.panels[k].details.open; });
        if (!st.view || others.length === 0) { loadRoom(st); }
      });
      box.appendChild(d);
      st.panels[p[0]] = { details: d, body: body };
    });
    var bar = el("div", { "class": "manage-bar" });
    var reload = el("button", { type: "button", "class": "secondary ro-ok", "data-reload": "", hidden: "",
      "aria-label": "Reload the settings, events and rules of " + st.id }, "Reload");
    st.reload = reload;
    reload.addEventListener("click", function () { loadRoom(st); });
    bar.appendChild(reload);
    st.mmsg = el("p", { "class": "note", role: "status", "data-manage-msg": "" });
    bar.appendChild(st.mmsg);
    box.insertBefore(bar, box.firstChild);
    st.manageOpen = function () {
      return Object.keys(st.panels).some(function (k) { return st.panels[k].details.open; });
    };
    return box;
  }

  // loadRoom reads the room (settings, overrides, events, rules and their
  // ETags) and draws its open panels again.
  function loadRoom(st) {
    st.manage.setAttribute("aria-busy", "true");
    return api("GET", roomPath(st)).then(function (r) {
      st.manage.removeAttribute("aria-busy");
      if (!r.ok || !r.data) { st.mmsg.textContent = "Cannot read the room: " + errorText(r); return; }
      st.view = r.data;
      st.etag = r.etag || r.data.etag;
      st.reload.hidden = false;
      var key = focusKey(st, document.activeElement);
      renderSettings(st);
      renderEvents(st);
      renderRules(st);
      if (key && !st.node.contains(document.activeElement)) {
        var n = st.node.querySelector(key);
        if (n) { n.focus(); }
      }
      if (role !== "write") {
        st.node.querySelectorAll(".manage .panel button, .manage input, .manage select, .manage textarea").forEach(function (c) {
          c.disabled = true;
          c.setAttribute("aria-describedby", "readonly");
        });
      }
    }, function () {
      st.manage.removeAttribute("aria-busy");
      st.mmsg.textContent = "The admin listener cannot be reached.";
    });
  }

  // focusKey names the control e of a room's panels so that it can be
  // found again after they are drawn anew: "" when there is none.
  function focusKey(st, e) {
    if (!e || !st.node.contains(e) || !e.closest(".panel-body")) { return ""; }
    if (e.id) { return "#" + CSS.escape(e.id); }
    var names = ["data-apply-group", "data-submit", "data-reset-all", "aria-label"];
    for (var i = 0; i < names.length; i++) {
      var v = e.getAttribute(names[i]);
      if (v !== null) { return "[" + names[i] + "=\"" + CSS.escape(v) + "\"]"; }
    }
    return "";
  }

  function fid(st, scope, k) { return "s-" + st.id + "-" + scope + "-" + k.replace(/\./g, "-"); }

  // getPath reads "a.b" from an object.
  function getPath(o, k) {
    var parts = k.split(".");
    for (var i = 0; i < parts.length && o !== undefined && o !== null; i++) { o = o[parts[i]]; }
    return o === null ? undefined : o;
  }

  // input makes the control of a field with its label, value v.
  function input(f, id, v) {
    var wrap = el("div", { "class": "field" + (f.t === "bool" ? " check" : "") });
    var c;
    if (f.t === "bool") {
      c = el("input", { id: id, type: "checkbox", "data-field": f.k });
      c.checked = v === true;
    } else if (f.t === "select") {
      c = el("select", { id: id, "data-field": f.k });
      var opts = f.o.slice();
      var cur = v === undefined ? "" : String(v);
      if (opts.indexOf(cur) < 0) { opts.push(cur); }
      opts.forEach(function (o) { c.appendChild(el("option", { value: o }, o === "" ? "(not set)" : o)); });
      c.value = cur;
    } else if (f.t === "json") {
      c = el("textarea", { id: id, rows: "3", spellcheck: "false", "data-field": f.k });
      c.value = v === undefined ? "" : JSON.stringify(v);
    } else {
      c = el("input", { id: id, type: "text", spellcheck: "false", autocomplete: "off", "data-field": f.k });
      if (f.t === "int") { c.setAttribute("inputmode", "numeric"); }
      if (f.t === "num") { c.setAttribute("inputmode", "decimal"); }
      c.value = v === undefined ? "" : String(v);
    }
    var label = el("label", { "for": id }, f.label || f.k);
    if (f.t === "bool") {
      wrap.appendChild(c);
      wrap.appendChild(label);
    } else {
      wrap.appendChild(label);
      wrap.appendChild(c);
    }
    if (f.help) {
      var hid = id + "-help";
      wrap.appendChild(el("span", { id: hid, "class": "help" }, f.help));
      c.setAttribute("aria-describedby", hid);
    }
    return { wrap: wrap, control: c };
  }

  // valueOf reads a control: {v} the value to send, {unset: true} when an
  // optional field is left empty, {err} when it cannot be read.
  function valueOf(f, c) {
    if (f.t === "bool") { return { v: c.checked }; }
    var raw = c.value.trim();
    if (raw === "" && (f.opt || f.t === "json")) { return { unset: true }; }
    if (f.t === "json") {
      try { return { v: JSON.parse(raw) }; } catch (e) { return { err: f.k + ": not valid JSON (" + e.message + ")" }; }
    }
    if (f.bool) { return { v: raw === "true" }; }
    if ((f.t === "int" || f.num) && /^-?\d+$/.test(raw)) { return { v: parseInt(raw, 10) }; }
    if (f.t === "num" && raw !== "" && isFinite(Number(raw))) { return { v: Number(raw) }; }
    // Anything else goes as typed, and the API says what is wrong with it.
    return { v: raw };
  }

  function section(title) {
    var s = el("section", { "class": "sub" });
    s.appendChild(el("h3", null, title));
    return s;
  }

  function writeButton(text, label, handler) {
    var b = el("button", { type: "button", "class": "secondary" }, text);
    if (label) { b.setAttribute("aria-label", label); }
    b.addEventListener("click", function () { handler(b); });
    return b;
  }

  // patchRoom asks to PATCH the room with body, showing rows.
  function patchRoom(st, what, rows, body, control) {
    if (rows.length === 0) { st.mmsg.textContent = what + ": nothing changed."; return; }
    st.mmsg.textContent = "";
    confirmChange({
      what: "Room " + st.id + ": " + what + ".",
      rows: rows, control: control,
      send: function () { return api("PATCH", roomPath(st), body, st.etag); },
      done: function () { st.mmsg.textContent = what + ": applied."; changed(st); }
    });
  }

  // overrideBody is the PATCH body that drops one override, as the
  // overrides name it ("cookie_attributes.samesite" is a key of a block).
  function overrideBody(name) {
    var b = {};
    var parts = name.split(".");
    if (parts.length === 2) { b[parts[0]] = {}; b[parts[0]][parts[1]] = null; } else { b[name] = null; }
    return b;
  }

  function renderSettings(st) {
    var body = st.panels.settings.body;
    body.textContent = "";
    var v = st.view;
    var s = v.settings || {};
    var ov = v.overrides || {};

    // The runtime overrides, each with the file's value and a reset.
    var os = section("Runtime overrides");
    os.setAttribute("data-overrides", "");
    var names = Object.keys(ov).sort();
    if (names.length === 0) {
      os.appendChild(el("p", { "class": "note" }, "None: every setting is the config file's."));
    } else {
      os.appendChild(el("p", { "class": "note" }, "Set at runtime, over the config file (applied by every node, kept in the store):"));
      var lt = listTable({}, ["Field", "Value", "File", "Since", "By", ""]);
      var tbl = lt.table, tb = lt.body;
      names.forEach(function (n) {
        var o = ov[n];
        var tr = el("tr", { "data-override": n });
        tr.appendChild(el("th", { scope: "row" }, n));
        tr.appendChild(el("td", null, show(o.value)));
        tr.appendChild(el("td", null, show(o.file)));
        tr.appendChild(el("td", null, utc(o.at)));
        tr.appendChild(el("td", null, o.by));
        var td = el("td");
        if (n === "events" || n === "rules") {
          td.appendChild(el("span", { "class": "help" }, "change one by one, or reset all"));
        } else {
          td.appendChild(writeButton("Reset", "Reset " + n + " to the file", function (b) {
            patchRoom(st, "reset " + n + " to the file", [[n, o.value, o.file]], overrideBody(n), b);
          }));
        }
        tr.appendChild(td);
        tb.appendChild(tr);
      });
      var sc = el("div", { "class": "scroll" });
      sc.appendChild(tbl);
      os.appendChild(sc);
      os.appendChild(writeButton("Reset all to the file…", "Reset every override of " + st.id + " to the file", function (b) {
        confirmChange({
          what: "Room " + st.id + ": drop every runtime override; its settings, events and rules follow the config file again.",
          rows: names.map(function (n) { return [n, ov[n].value, ov[n].file]; }),
          control: b,
          send: function () { return api("DELETE", roomPath(st) + "/overrides", undefined, st.etag); },
          done: function () { st.mmsg.textContent = "Reset to the file."; changed(st); }
        });
      })).setAttribute("data-reset-all", "");
    }
    if (v.not_in_force && v.not_in_force.length) {
      os.appendChild(el("p", { "class": "error" }, "Not in force on this node: " + v.not_in_force.join("; ")));
    }
    body.appendChild(os);

    GROUPS.forEach(function (g) { body.appendChild(groupForm(st, g, s, ov)); });
    body.appendChild(webhooksForm(st, s));
    body.appendChild(advancedForm(st, s));
  }

  // groupForm is the form of one group of settings, with the values in
  // force beside the fields.
  function groupForm(st, g, s, ov) {
    var form = el("form", { "class": "group", "data-group": g.id, novalidate: "" });
    var fs = el("fieldset");
    fs.appendChild(el("legend", null, g.title));
    var block = g.obj ? s[g.obj] : undefined;
    if (g.obj) {
      fs.appendChild(el("p", { "class": "note" }, block === undefined ?
        "Off in force: fill the fields to turn it on (the block is set as a whole)." :
        "In force: " + JSON.stringify(block) + (ov[g.obj] ? " (runtime override since " + utc(ov[g.obj].at) + ")" : "")));
    }
    var controls = [];
    g.fields.forEach(function (f) {
      var cur = g.obj ? (block ? block[f.k] : undefined) : getPath(s, f.k);
      var id = fid(st, g.id, f.k);
      var x = input(f, id, cur === undefined && f.def !== undefined ? f.def : cur);
      if (!g.obj) {
        var now = el("span", { "class": "now", "data-now": f.k }, "in force: " + show(cur));
        if (ov[f.k]) {
          now.appendChild(el("span", { "class": "badge ovr" }, "override"));
        }
        x.wrap.appendChild(now);
      }
      fs.appendChild(x.wrap);
      controls.push({ f: f, c: x.control, cur: cur });
    });
    var b = el("button", { type: "submit", "data-apply-group": g.id, "aria-label": "Apply… " + g.title + " of " + st.id }, "Apply…");
    fs.appendChild(b);
    form.appendChild(fs);
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      var rows = [], body = {}, bad = "";
      if (g.obj) {
        // The block is sent whole. One not in force is turned on by a
        // field filled in, or a switch moved from its default.
        var nb = {}, on = block !== undefined;
        controls.forEach(function (x) {
          var r = valueOf(x.f, x.c);
          if (r.err) { bad = bad || r.err; return; }
          if (!r.unset) { nb[x.f.k] = r.v; }
          var was = x.cur;
          if (!on && x.f.t === "bool") { was = x.f.def === true; }
          if (canon(r.unset ? undefined : r.v) !== canon(was) && !(r.unset && was === undefined)) {
            rows.push([g.obj + "." + x.f.k, x.cur, r.unset ? undefined : r.v]);
          }
        });
        if (!bad && rows.length) { body[g.obj] = nb; }
      } else {
        controls.forEach(function (x) {
          var r = valueOf(x.f, x.c);
          if (r.err) { bad = bad || r.err; return; }
          if (r.unset || canon(r.v) === canon(x.cur)) { return; }
          rows.push([x.f.k, x.cur, r.v]);
          var parts = x.f.k.split(".");
          if (parts.length === 2) {
            body[parts[0]] = body[parts[0]] || {};
            body[parts[0]][parts[1]] = r.v;
          } else {
            body[x.f.k] = r.v;
          }
        });
      }
      if (bad) { st.mmsg.textContent = "Field " + bad; return; }
      patchRoom(st, g.title, rows, body, b);
    });
    return form;
  }

  // webhooksForm edits the room's webhooks as a list: a secret is never
  // shown (left empty it is kept), a URL shows as scheme and host (left as
  // shown it is kept).
  function webhooksForm(st, s) {
    var hooks = (s.webhooks || []).slice();
    var form = el("form", { "class": "group", "data-group": "webhooks", novalidate: "" });
    var fs = el("fieldset");
    fs.appendChild(el("legend", null, "Webhooks"));
    fs.appendChild(el("p", { "class": "note" }, "Secrets are never shown: leave a secret empty to keep it. A URL shows as scheme and host: leave it as shown to keep it. Events: comma-separated types or families (" + WEBHOOK_EVENTS + "); empty: every room event."));
    var list = el("div", { "class": "hooks" });
    fs.appendChild(list);
    var rowsOf = [];
    function addHook(h, n) {
      var box = el("fieldset", { "class": "hook", "data-hook": String(n) });
      box.appendChild(el("legend", null, h ? "Webhook " + h.name : "New webhook"));
      var fields = {};
      [{ k: "name", t: "text" }, { k: "url", t: "text" },
        { k: "secret", t: "text", label: "secret", help: h ? "(set): leave empty to keep" : "at least 16 characters" },
        { k: "events", t: "text", opt: true }, { k: "visitor_events", t: "num", opt: true },
        { k: "timeout", t: "dur", opt: true }, { k: "max_queue", t: "int", opt: true }].forEach(function (f) {
        var cur = h ? h[f.k] : undefined;
        if (f.k === "secret") { cur = undefined; }
        if (f.k === "events" && cur) { cur = cur.join(", "); }
        var x = input(f, fid(st, "hook" + n, f.k), cur);
        if (f.k === "secret") { x.control.type = "password"; x.control.autocomplete = "new-password"; }
        box.appendChild(x.wrap);
        fields[f.k] = x.control;
      });
      var rm = input({ k: "remove", t: "bool", label: "remove this webhook" }, fid(st, "hook" + n, "remove"), false);
      box.appendChild(rm.wrap);
      fields.remove = rm.control;
      list.appendChild(box);
      rowsOf.push({ h: h, c: fields });
    }
    hooks.forEach(function (h, i) { addHook(h, i); });
    var add = el("button", { type: "button", "class": "secondary", "data-add-hook": "" }, "Add a webhook");
    add.addEventListener("click", function () {
      addHook(null, rowsOf.length);
      rowsOf[rowsOf.length - 1].c.name.focus();
    });
    fs.appendChild(add);
    var b = el("button", { type: "submit", "data-apply-group": "webhooks", "aria-label": "Apply… webhooks of " + st.id }, "Apply…");
    fs.appendChild(b);
    form.appendChild(fs);
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      var out = [], shown = [], bad = "";
      rowsOf.forEach(function (x, i) {
        if (x.c.remove.checked) { return; }
        var w = {};
        ["name", "url"].forEach(function (k) { w[k] = x.c[k].value.trim(); });
        if (!x.h && w.name === "" && w.url === "") { return; } // an empty new one
        var secret = x.c.secret.value;
        if (secret !== "") { w.secret = secret; }
        var evs = x.c.events.value.split(",").map(function (t) { return t.trim(); }).filter(function (t) { return t; });
        if (evs.length) { w.events = evs; }
        [["visitor_events", "num"], ["timeout", "dur"], ["max_queue", "int"]].forEach(function (p) {
          var r = valueOf({ k: p[0], t: p[1], opt: true }, x.c[p[0]]);
          if (r.err) { bad = bad || "webhooks[" + i + "]." + r.err; }
          if (!r.unset) { w[p[0]] = r.v; }
        });
        out.push(w);
        var sw = JSON.parse(JSON.stringify(w));
        sw.secret = "(set)";
        shown.push(sw);
      });
      if (bad) { st.mmsg.textContent = "Field " + bad; return; }
      var before = hooks.map(function (h) { var c = JSON.parse(JSON.stringify(h)); c.secret = "(set)"; delete c.secret_file; return c; });
      if (canon(before) === canon(shown) && !out.some(function (w) { return w.secret !== undefined; })) {
        st.mmsg.textContent = "Webhooks: nothing changed.";
        return;
      }
      patchRoom(st, "webhooks", [["webhooks", s.webhooks, shown]], { webhooks: out }, b);
    });
    return form;
  }

  // advancedForm edits the room's settings as one JSON object: the fields
  // whose value differs are sent (null drops a field's runtime override).
  function advancedForm(st, s) {
    var d = el("details", { "class": "advanced" });
    d.appendChild(el("summary", null, "Advanced: edit as JSON"));
    var form = el("form", { "data-group": "json", novalidate: "" });
    var id = fid(st, "json", "settings");
    form.appendChild(el("label", { "for": id }, "The room's settings as JSON (fields as the config file writes them; a field set to null goes back to the file's value; secrets show as \"(set)\" and are kept)"));
    var ta = el("textarea", { id: id, rows: "14", spellcheck: "false" });
    ta.value = JSON.stringify(s, null, 2);
    form.appendChild(ta);
    var b = el("button", { type: "submit", "data-apply-group": "json" }, "Apply…");
    form.appendChild(b);
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      var v;
      try { v = JSON.parse(ta.value); } catch (err) { st.mmsg.textContent = "Field settings: not valid JSON (" + err.message + ")"; return; }
      if (!v || typeof v !== "object" || Array.isArray(v)) { st.mmsg.textContent = "Field settings: must be a JSON object"; return; }
      var rows = [], body = {};
      Object.keys(v).sort().forEach(function (k) {
        if (canon(v[k]) === canon(s[k])) { return; }
        rows.push([k, s[k], v[k]]);
        body[k] = v[k];
      });
      patchRoom(st, "settings (JSON)", rows, body, b);
    });
    d.appendChild(form);
    return d;
  }

  // eventState says where an event is now.
  function eventState(e, now) {
    var open = Date.parse(e.prequeue_start_time || e.event_start_time);
    var start = Date.parse(e.event_start_time), end = Date.parse(e.event_end_time);
    if (now >= end) { return "ended"; }
    if (now >= start) { return "running"; }
    if (now >= open) { return "pre-queue"; }
    return "scheduled";
  }

  var EVENT_KNOWN = {};
  EVENT_FIELDS.forEach(function (f) { EVENT_KNOWN[f.k] = true; });
  EVENT_KNOWN.etag = true;

  // others returns an event's fields the form has no field for.
  function others(e) {
    var o = {};
    Object.keys(e || {}).forEach(function (k) { if (!EVENT_KNOWN[k]) { o[k] = e[k]; } });
    return o;
  }

  function renderEvents(st) {
    var body = st.panels.events.body;
    body.textContent = "";
    var list = (st.view.events && st.view.events.events) || [];
    var now = Date.now();
    var sc = el("div", { "class": "scroll" });
    var lt = listTable({ "data-events": "" }, ["Name", "Pre-queue", "Start", "End", "Overrides", "State", ""],
      list.length === 0 && "No events.");
    var tbl = lt.table, tb = lt.body;
    var form = eventForm(st);
    list.forEach(function (e) {
      var tr = el("tr", { "data-event": e.name });
      tr.appendChild(el("th", { scope: "row" }, e.name));
      tr.appendChild(el("td", null, e.prequeue_start_time ? utc(e.prequeue_start_time) : "–"));
      tr.appendChild(el("td", null, utc(e.event_start_time)));
      tr.appendChild(el("td", null, utc(e.event_end_time)));
      var o = {};
      Object.keys(e).forEach(function (k) {
        if (["name", "prequeue_start_time", "event_start_time", "event_end_time", "etag"].indexOf(k) < 0) { o[k] = e[k]; }
      });
      tr.appendChild(el("td", { "class": "json" }, JSON.stringify(o)));
      tr.appendChild(el("td", { "data-state": "" }, eventState(e, now)));
      var td = el("td", { "class": "actions" });
      td.appendChild(writeButton("Edit", "Edit event " + e.name, function () { form.edit(e); }));
      td.appendChild(writeButton("Delete…", "Delete event " + e.name, function (b) {
        confirmChange({
          what: "Room " + st.id + ": delete event “" + e.name + "”.",
          rows: [["event " + e.name, strip(e), undefined]], control: b,
          send: function () { return api("DELETE", roomPath(st) + "/events/" + encodeURIComponent(e.name), undefined, e.etag); },
          done: function () { st.mmsg.textContent = "Event “" + e.name + "” deleted."; changed(st); }
        });
      }));
      tr.appendChild(td);
      tb.appendChild(tr);
    });
    sc.appendChild(tbl);
    body.appendChild(sc);
    body.appendChild(form.node);
  }

  // listTable returns a table of class "list" (with attrs) whose header row
  // names the columns, and its body; empty, when given, is the body's one
  // row.
  function listTable(attrs, headers, empty) {
    var tbl = el("table", Object.assign({ "class": "list" }, attrs));
    var hr = el("tr");
    headers.forEach(function (h) { hr.appendChild(el("th", { scope: "col" }, h)); });
    tbl.appendChild(el("thead")).appendChild(hr);
    var tb = tbl.appendChild(el("tbody"));
    if (empty) {
      tb.appendChild(el("tr")).appendChild(el("td", { colspan: String(headers.length) }, empty));
    }
    return { table: tbl, body: tb };
  }

  // strip returns a listed event or rule without its etag and index.
  function strip(x) {
    var o = {};
    Object.keys(x).forEach(function (k) { if (k !== "etag" && k !== "index") { o[k] = x[k]; } });
    return o;
  }

  // eventForm adds an event, or edits the one chosen with Edit.
  function eventForm(st) {
    var form = el("form", { "class": "group", "data-form": "event", novalidate: "" });
    var fs = el("fieldset");
    var legend = el("legend", null, "Add an event");
    fs.appendChild(legend);
    var cs = {};
    EVENT_FIELDS.forEach(function (f) {
      var x = input(f, fid(st, "event", f.k), undefined);
      fs.appendChild(x.wrap);
      cs[f.k] = x.control;
    });
    var ox = input({ k: "other", t: "json", label: "other overrides (JSON object)", help: "like {\"proof_of_work\": {\"difficulty\": 18}}" },
      fid(st, "event", "other"), undefined);
    fs.appendChild(ox.wrap);
    var b = el("button", { type: "submit", "data-submit": "event" }, "Add…");
    var cancel = el("button", { type: "button", "class": "secondary", hidden: "" }, "New event instead");
    fs.appendChild(b);
    fs.appendChild(cancel);
    form.appendChild(fs);
    var editing = null;
    function fill(e) {
      editing = e;
      legend.textContent = e ? "Edit event “" + e.name + "”" : "Add an event";
      b.textContent = e ? "Save…" : "Add…";
      cancel.hidden = !e;
      EVENT_FIELDS.forEach(function (f) {
        var v = e ? e[f.k] : undefined;
        if (f.t === "bool") { cs[f.k].checked = v === true; } else { cs[f.k].value = v === undefined ? "" : String(v); }
      });
      var o = others(e);
      ox.control.value = Object.keys(o).length ? JSON.stringify(o) : "";
    }
    cancel.addEventListener("click", function () { fill(null); cs.name.focus(); });
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var nv = {}, bad = "";
      EVENT_FIELDS.forEach(function (f) {
        var r = valueOf(f, cs[f.k]);
        if (r.err) { bad = bad || r.err; return; }
        if (!r.unset) { nv[f.k] = r.v; }
      });
      var other = valueOf({ k: "other", t: "json" }, ox.control);
      if (other.err) { bad = bad || other.err; }
      if (bad) { st.mmsg.textContent = "Field " + bad; return; }
      if (!other.unset) {
        if (!other.v || typeof other.v !== "object" || Array.isArray(other.v)) { st.mmsg.textContent = "Field other: must be a JSON object"; return; }
        Object.keys(other.v).forEach(function (k) { nv[k] = other.v[k]; });
      }
      if (!editing) {
        confirmChange({
          what: "Room " + st.id + ": add event “" + (nv.name || "") + "”.",
          rows: Object.keys(nv).map(function (k) { return [k, undefined, nv[k]]; }), control: b,
          send: function () { return api("POST", roomPath(st) + "/events", nv, st.view.events.etag); },
          done: function () { st.mmsg.textContent = "Event “" + nv.name + "” added."; changed(st); }
        });
        return;
      }
      var e = editing, old = strip(e), patch = {}, rows = [];
      Object.keys(nv).forEach(function (k) {
        if (canon(nv[k]) !== canon(old[k])) { patch[k] = nv[k]; rows.push([k, old[k], nv[k]]); }
      });
      Object.keys(old).forEach(function (k) {
        if (nv[k] === undefined && !(cs[k] && cs[k].type === "checkbox")) { patch[k] = null; rows.push([k, old[k], undefined]); }
      });
      if (rows.length === 0) { st.mmsg.textContent = "Event “" + e.name + "”: nothing changed."; return; }
      confirmChange({
        what: "Room " + st.id + ": change event “" + e.name + "”.",
        rows: rows, control: b,
        send: function () { return api("PATCH", roomPath(st) + "/events/" + encodeURIComponent(e.name), patch, e.etag); },
        done: function () { st.mmsg.textContent = "Event “" + (nv.name || e.name) + "” changed."; changed(st); }
      });
    });
    return {
      node: form,
      edit: function (e) { fill(e); st.panels.events.details.open = true; cs.name.focus(); }
    };
  }

  function renderRules(st) {
    var body = st.panels.rules.body;
    body.textContent = "";
    var list = (st.view.rules && st.view.rules.rules) || [];
    var sc = el("div", { "class": "scroll" });
    var lt = listTable({ "data-rules": "" }, ["#", "Description", "Expression", "Action", "Enabled", ""],
      list.length === 0 && "No rules.");
    var tbl = lt.table, tb = lt.body;
    var form = ruleForm(st);
    list.forEach(function (rl) {
      var name = "rule " + rl.index + (rl.description ? " (" + rl.description + ")" : "");
      var tr = el("tr", { "data-rule": String(rl.index) });
      tr.appendChild(el("th", { scope: "row" }, String(rl.index)));
      tr.appendChild(el("td", null, rl.description || "–"));
      tr.appendChild(el("td", { "class": "json" }, rl.expression));
      tr.appendChild(el("td", null, rl.action));
      tr.appendChild(el("td", { "data-enabled": String(rl.enabled) }, rl.enabled ? "yes" : "no"));
      var td = el("td", { "class": "actions" });
      var path = roomPath(st) + "/rules/" + rl.index;
      td.appendChild(writeButton(rl.enabled ? "Disable…" : "Enable…", (rl.enabled ? "Disable " : "Enable ") + name, function (b) {
        confirmChange({
          what: "Room " + st.id + ": " + (rl.enabled ? "disable " : "enable ") + name + ".",
          rows: [["enabled", rl.enabled, !rl.enabled]], control: b,
          send: function () { return api("PATCH", path, { enabled: !rl.enabled }, rl.etag); },
          done: function () { st.mmsg.textContent = name + (rl.enabled ? " disabled." : " enabled."); changed(st); }
        });
      })).setAttribute("data-toggle", "");
      td.appendChild(writeButton("Edit", "Edit " + name, function () { form.edit(rl); }));
      td.appendChild(writeButton("Delete…", "Delete " + name, function (b) {
        confirmChange({
          what: "Room " + st.id + ": delete " + name + " (the rules after it move up one place).",
          rows: [[name, strip(rl), undefined]], control: b,
          send: function () { return api("DELETE", path, undefined, rl.etag); },
          done: function () { st.mmsg.textContent = name + " deleted."; changed(st); }
        });
      })).setAttribute("data-delete", "");
      tr.appendChild(td);
      tb.appendChild(tr);
    });
    sc.appendChild(tbl);
    body.appendChild(sc);
    body.appendChild(form.node);
  }

  // ruleForm adds a rule at the end, or edits the one chosen with Edit.
  function ruleForm(st) {
    var form = el("form", { "class": "group", "data-form": "rule", novalidate: "" });
    var fs = el("fieldset");
    var legend = el("legend", null, "Add a rule");
    fs.appendChild(legend);
    var cs = {};
    RULE_FIELDS.forEach(function (f) {
      var x = input(f, fid(st, "rule", f.k), f.k === "enabled" ? true : (f.k === "action" ? "bypass_waiting_room" : undefined));
      fs.appendChild(x.wrap);
      cs[f.k] = x.control;
    });
    var b = el("button", { type: "submit", "data-submit": "rule" }, "Add…");
    var cancel = el("button", { type: "button", "class": "secondary", hidden: "" }, "New rule instead");
    fs.appendChild(b);
    fs.appendChild(cancel);
    form.appendChild(fs);
    var editing = null;
    function fill(rl) {
      editing = rl;
      legend.textContent = rl ? "Edit rule " + rl.index : "Add a rule";
      b.textContent = rl ? "Save…" : "Add…";
      cancel.hidden = !rl;
      cs.description.value = rl && rl.description ? rl.description : "";
      cs.expression.value = rl ? rl.expression : "";
      cs.action.value = rl ? rl.action : "bypass_waiting_room";
      cs.enabled.checked = rl ? rl.enabled : true;
    }
    cancel.addEventListener("click", function () { fill(null); cs.description.focus(); });
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var nv = {};
      RULE_FIELDS.forEach(function (f) {
        var r = valueOf(f, cs[f.k]);
        if (!r.unset) { nv[f.k] = r.v; }
      });
      if (!editing) {
        confirmChange({
          what: "Room " + st.id + ": add a rule at the end.",
          rows: Object.keys(nv).map(function (k) { return [k, undefined, nv[k]]; }), control: b,
          send: function () { return api("POST", roomPath(st) + "/rules", nv, st.view.rules.etag); },
          done: function () { st.mmsg.textContent = "Rule added."; changed(st); }
        });
        return;
      }
      var rl = editing, old = strip(rl), patch = {}, rows = [];
      Object.keys(nv).forEach(function (k) {
        if (canon(nv[k]) !== canon(old[k])) { patch[k] = nv[k]; rows.push([k, old[k], nv[k]]); }
      });
      if (old.description !== undefined && nv.description === undefined) { patch.description = null; rows.push(["description", old.description, undefined]); }
      if (rows.length === 0) { st.mmsg.textContent = "Rule " + rl.index + ": nothing changed."; return; }
      confirmChange({
        what: "Room " + st.id + ": change rule " + rl.index + ".",
        rows: rows, control: b,
        send: function () { return api("PATCH", roomPath(st) + "/rules/" + rl.index, patch, rl.etag); },
        done: function () { st.mmsg.textContent = "Rule " + rl.index + " changed."; changed(st); }
      });
    });
    return {
      node: form,
      edit: function (rl) { fill(rl); st.panels.rules.details.open = true; cs.description.focus(); }
    };
  }

  // ---- the audit log ----

  var auditNext = 0;

  // loadAudit reads the newest entries of the audit log (more: the page
  // before the last one read).
  function loadAudit(more) {
    if (!token) { return; }
    var q = "?limit=50" + (more && auditNext ? "&before=" + auditNext : "");
    api("GET", "/api/v1/audit" + q).then(function (r) {
      if (!r.ok || !r.data) { $("audit-error").textContent = "Cannot read the audit log: " + errorText(r); return; }
      $("audit-error").textContent = "";
      var tb = $("audit-rows");
      if (!more) { tb.textContent = ""; }
      (r.data.entries || []).forEach(function (e) {
        var tr = el("tr", { "data-version": String(e.version), "data-action": e.action, "data-target": e.target });
        tr.appendChild(el("td", null, String(e.version)));
        tr.appendChild(el("td", null, e.time ? new Date(e.time).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z") : "?"));
        tr.appendChild(el("td", null, e.token || ""));
        tr.appendChild(el("td", null, e.action + (e.reason ? " (" + e.reason + ")" : "")));
        tr.appendChild(el("td", null, e.target || e.room || ""));
        tr.appendChild(el("td", { "class": "json" }, show(e.before)));
        tr.appendChild(el("td", { "class": "json" }, show(e.after)));
        tb.appendChild(tr);
      });
      if (!more && (r.data.entries || []).length === 0) {
        var tr0 = el("tr");
        tr0.appendChild(el("td", { colspan: "7" }, "No changes yet."));
        tb.appendChild(tr0);
      }
      auditNext = r.data.next_before || 0;
      $("audit-more").hidden = !auditNext;
    }, function () {
      $("audit-error").textContent = "The admin listener cannot be reached.";
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
    $("audit-refresh").addEventListener("click", function () { loadAudit(false); });
    $("audit-more").addEventListener("click", function () { loadAudit(true); });
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
