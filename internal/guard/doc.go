// Package guard holds the checks the gate makes before a ticket is issued:
// proof of work now; per-client limits and ticket binding will join it.
//
// # Proof of work
//
// A new visitor first gets a challenge (PoW.Issue): a short signed text
// bound to the room, the client's address prefix and the time, with a
// difficulty d. The visitor's browser (the challenge page's Web Worker) or
// app finds a decimal counter n such that SHA-256(challenge + ":" + n)
// starts with at least d zero bits, about 2^d attempts, and sends
// challenge.n back in the __usher_pow cookie or the X-Usher-Pow header.
// PoW.Verify checks it in about a microsecond and without allocating:
// the MAC under any key of the ring, the room, the prefix, the time, the
// room's current minimum difficulty and the hash. A challenge is good for
// one ticket: Verify returns its id, which the gate spends in a Spent set
// (MemorySpent on one node, the shared store on several) before issuing the
// ticket.
//
// The work prices each new place in line; it does not stop a patient
// attacker with many CPUs (docs/pow.md has the figures).
package guard
