// usher's proof-of-work solver, run as a Web Worker by the challenge page.
//
// It finds the smallest decimal counter n such that
// SHA-256(challenge + ":" + n) starts with at least `difficulty` zero bits
// (internal/guard). SHA-256 is written out here: one call of
// crypto.subtle.digest per attempt costs far more than the hash itself.
// The whole 64-byte blocks of challenge + ":" are hashed once; each attempt
// hashes only the last block or two, and the counter's digits are
// incremented in place.
//
// Message in:  {challenge: string, difficulty: 1..32, limit: optional
//               number of attempts after which to stop (for measuring)}
// Messages out: {attempts: number} every 50,000 attempts;
//               {n: "123", attempts: number, ms: number} when solved;
//               {done: true, attempts: number, ms: number} at the limit;
//               {error: string} on bad input.
"use strict";

var K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2
]);
var IV = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
var W = new Int32Array(64);

// compress runs the SHA-256 compression of the 64 bytes of b at off into
// the state H (Int32Array(8)), in place.
function compress(H, b, off) {
  var i, t1, t2, x, y;
  for (i = 0; i < 16; i++) {
    W[i] = (b[off] << 24) | (b[off + 1] << 16) | (b[off + 2] << 8) | b[off + 3];
    off += 4;
  }
  for (i = 16; i < 64; i++) {
    x = W[i - 15];
    y = W[i - 2];
    W[i] = (((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3)) +
      (((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10)) +
      W[i - 7] + W[i - 16] | 0;
  }
  var a = H[0], bb = H[1], c = H[2], d = H[3], e = H[4], f = H[5], g = H[6], h = H[7];
  for (i = 0; i < 64; i++) {
    t1 = h + (((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7))) +
      ((e & f) ^ (~e & g)) + K[i] + W[i] | 0;
    t2 = (((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10))) +
      ((a & bb) ^ (a & c) ^ (bb & c)) | 0;
    h = g; g = f; f = e; e = d + t1 | 0;
    d = c; c = bb; bb = a; a = t1 + t2 | 0;
  }
  H[0] = H[0] + a | 0; H[1] = H[1] + bb | 0; H[2] = H[2] + c | 0; H[3] = H[3] + d | 0;
  H[4] = H[4] + e | 0; H[5] = H[5] + f | 0; H[6] = H[6] + g | 0; H[7] = H[7] + h | 0;
}

function solve(challenge, difficulty, limit) {
  var started = performance.now();
  var prefix = challenge + ":";
  var len = prefix.length, i;
  var bytes = new Uint8Array(len);
  for (i = 0; i < len; i++) {
    var code = prefix.charCodeAt(i);
    if (code > 127) { return { error: "challenge is not ASCII" }; }
    bytes[i] = code;
  }
  // The state after the whole blocks of the prefix.
  var mid = new Int32Array(IV);
  var full = len - len % 64;
  for (i = 0; i < full; i += 64) { compress(mid, bytes, i); }
  var tail = len - full;
  var msg = new Uint8Array(128);
  msg.set(bytes.subarray(full));
  var H = new Int32Array(8);
  var shift = 32 - difficulty;
  var digits = 1, blocks = 0;
  msg[tail] = 48; // "0"

  // layout writes the padding and the bit length after digits digits.
  function layout() {
    var end = tail + digits;
    msg.fill(0, end);
    msg[end] = 0x80;
    blocks = end + 9 <= 64 ? 1 : 2;
    var bitsLen = (len + digits) * 8;
    var last = blocks * 64;
    msg[last - 4] = bitsLen >>> 24; msg[last - 3] = bitsLen >>> 16;
    msg[last - 2] = bitsLen >>> 8; msg[last - 1] = bitsLen;
  }
  layout();

  for (var n = 0; ; n++) {
    if (limit && n >= limit) {
      return { done: true, attempts: n, ms: performance.now() - started };
    }
    H.set(mid);
    compress(H, msg, 0);
    if (blocks === 2) { compress(H, msg, 64); }
    if ((H[0] >>> shift) === 0) {
      return { n: String(n), attempts: n + 1, ms: performance.now() - started };
    }
    if (n % 50000 === 49999) { postMessage({ attempts: n + 1 }); }
    // n + 1, in place.
    i = tail + digits - 1;
    while (i >= tail && msg[i] === 57) { msg[i] = 48; i--; }
    if (i >= tail) {
      msg[i]++;
    } else {
      digits++;
      msg[tail] = 49;
      for (i = tail + 1; i < tail + digits; i++) { msg[i] = 48; }
      layout();
    }
  }
}

onmessage = function (ev) {
  var d = ev.data || {};
  var difficulty = Number(d.difficulty);
  if (typeof d.challenge !== "string" || !(difficulty >= 1 && difficulty <= 32) || difficulty !== Math.floor(difficulty)) {
    postMessage({ error: "bad challenge" });
    return;
  }
  postMessage(solve(d.challenge, difficulty, Number(d.limit) || 0));
};
