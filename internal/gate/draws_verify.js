// Recomputes a room's published draws (docs/fairness.md) with WebCrypto:
// the same computations as usher's internal/draw.
"use strict";
(function () {
  const enc = new TextEncoder();
  const EPOCH = 1024n;
  const hexOf = (b) => Array.from(new Uint8Array(b), (x) => x.toString(16).padStart(2, "0")).join("");
  const bytesOf = (h) => {
    if (!/^([0-9a-f]{2})*$/.test(h)) throw new Error("not hex: " + h);
    const out = new Uint8Array(h.length / 2);
    for (let i = 0; i < out.length; i++) out[i] = parseInt(h.substr(2 * i, 2), 16);
    return out;
  };
  const sha = async (b) => new Uint8Array(await crypto.subtle.digest("SHA-256", b));
  // hash: SHA-256 of the parts, each after its length (8 bytes, big-endian).
  const hash = async (...parts) => {
    const bs = parts.map((p) => (typeof p === "string" ? enc.encode(p) : p));
    const out = new Uint8Array(bs.reduce((n, b) => n + 8 + b.length, 0));
    let o = 0;
    for (const b of bs) {
      new DataView(out.buffer).setBigUint64(o, BigInt(b.length));
      out.set(b, o + 8);
      o += 8 + b.length;
    }
    return sha(out);
  };
  const hmac = async (key, msg) => {
    const k = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    return new Uint8Array(await crypto.subtle.sign("HMAC", k, msg));
  };
  const u64 = (b) => new DataView(b.buffer, b.byteOffset).getBigUint64(0);
  const cmp = (a, b) => {
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] - b[i];
    return 0;
  };

  async function shuffle(room, d, bad) {
    const secret = bytesOf(d.secret);
    if (hexOf(await hash("usher draw commit v1", room, d.id, secret)) !== d.commitment) bad("the secret does not open the commitment");
    const seed = await hash("usher draw seed v1", secret, d.beacon || "");
    if (hexOf(seed) !== d.seed) bad("the seed is not the hash of the secret and the beacon");
    const keys = [];
    const seen = new Set();
    for (const [i, p] of (d.order || []).entries()) {
      if (seen.has(p.entry)) bad("entry " + p.entry + " is listed twice");
      seen.add(p.entry);
      const k = await hmac(seed, bytesOf(p.entry));
      const place = BigInt(d.start) - BigInt(d.span) + ((u64(k) * BigInt(d.span)) >> 64n);
      if (place !== BigInt(p.place)) bad("order[" + i + "]: entry " + p.entry + " has place " + p.place + ", the seed gives " + place);
      keys.push({ entry: p.entry, k });
    }
    const sorted = keys.slice().sort((a, b) => cmp(a.k, b.k));
    for (let i = 0; i < keys.length; i++) {
      if (keys[i].entry !== sorted[i].entry) {
        bad("order[" + i + "]: entry " + keys[i].entry + " is out of place: the seed puts " + sorted[i].entry + " there");
        break;
      }
    }
  }

  async function lottery(d, bad) {
    if (d.secret) {
      let l = await hash("usher draw link v1", bytesOf(d.secret));
      for (let i = 0n; i < EPOCH; i++) l = await sha(l);
      if (hexOf(l) !== d.commitment) bad("the secret's chain does not end at the commitment");
    }
    for (const w of d.windows || []) {
      let l = bytesOf(w.link);
      const n = BigInt(w.window) % EPOCH + 1n;
      for (let i = 0n; i < n; i++) l = await sha(l);
      if (hexOf(l) !== d.commitment) {
        bad("window " + w.window + ": the link does not hash to the commitment");
        continue;
      }
      for (const a of w.admitted || []) {
        const k = await hmac(bytesOf(w.link), bytesOf(a.entry));
        const v = Number(u64(k) >> 11n) / 2 ** 53;
        if (v !== a.draw) bad("window " + w.window + ": entry " + a.entry + " drew " + v + ", not " + a.draw);
      }
    }
  }

  async function main() {
    const status = document.getElementById("status");
    const list = document.getElementById("draws");
    const url = location.pathname.replace(/\/verify$/, "");
    const body = await (await fetch(url)).json();
    let problems = 0;
    for (const d of body.draws) {
      const li = document.createElement("li");
      const msgs = [];
      const bad = (m) => msgs.push(m);
      if (d.revealed) {
        try {
          if (d.kind === "shuffle") await shuffle(body.room, d, bad);
          else if (d.kind === "lottery") await lottery(d, bad);
          else bad("unknown kind " + d.kind);
        } catch (e) {
          bad(String(e));
        }
      }
      problems += msgs.length;
      li.className = msgs.length ? "bad" : "ok";
      li.dataset.id = d.id;
      li.textContent = d.id + ": " + (!d.revealed ? "committed, not revealed yet" : msgs.length ? "DOES NOT MATCH: " + msgs.join("; ") : "verified") + " (commitment " + d.commitment + ")";
      list.appendChild(li);
    }
    status.textContent = problems ? "MISMATCH: " + problems + " problem(s)" : "All " + body.draws.length + " draw(s) verified.";
    status.className = problems ? "bad" : "ok";
    status.dataset.done = problems ? "mismatch" : "verified";
    document.getElementById("entry").addEventListener("input", (ev) => {
      const e = ev.target.value.trim().toLowerCase();
      for (const d of body.draws) {
        const i = (d.order || []).findIndex((p) => p.entry === e);
        if (i >= 0) status.textContent = "Entry found in " + d.id + " at position " + (i + 1) + " of " + d.order.length + ".";
      }
    });
  }
  main().catch((e) => {
    const status = document.getElementById("status");
    status.textContent = "Could not check: " + e;
    status.className = "bad";
    status.dataset.done = "error";
  });
})();
