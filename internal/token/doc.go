// Package token signs usher's admission tokens and publishes the keys that
// check them.
//
// An admission token is a short-lived JWT (JWS compact serialization,
// EdDSA with Ed25519) that usher adds to an admitted visitor's upstream
// request, so that the origin can check, without calling usher, that the
// visitor came through the line. Its claims name the room (aud), the
// visitor (sub), when and after how long a wait the visitor was admitted,
// and expire after a few minutes, never after the visitor's session.
//
// Keys are derived from the ticket key ring (DeriveKeys), so every node
// that shares the ring signs with the same keys and rotation follows the
// ring: the first key signs, every key is published in the JSON Web Key
// Set and verifies. Operators who want token keys of their own give
// Ed25519 private keys instead (ParsePrivateKey, NewFromKeys).
//
// A Signer signs and serves the key set (JWKSHandler); a Verifier checks
// tokens for usher's own verify endpoint (VerifyHandler). Origins written
// in Go use the public package verify at the module root instead.
package token
