// Package verify lets an origin check that a visitor came through usher's
// waiting room.
//
// When usher admits a visitor, it adds a short-lived admission token to
// each request it passes to your site, in the X-Usher-Admission header
// (the name is configurable). The token is a JWT signed by usher with
// Ed25519 (alg EdDSA); usher publishes its public keys as a JSON Web Key
// Set at /__usher/jwks.json. A Verifier fetches and caches those keys and
// checks tokens locally, with no call to usher per request:
//
//	v, err := verify.New(verify.Options{
//		JWKSURL: "https://shop.example/__usher/jwks.json",
//		Room:    "sale",
//		RoomURL: "https://shop.example/",
//	})
//	if err != nil {
//		log.Fatal(err)
//	}
//	http.Handle("/checkout/", v.Middleware(checkout))
//
// Behind the middleware, verify.ClaimsFrom(r.Context()) returns the
// visitor's claims: the room, the visitor id, when they were admitted and
// how long they waited. A request without a valid token never reaches the
// handler: a browser asking for a page (GET or HEAD, Accept: text/html)
// is redirected to RoomURL, anything else gets 401 with a small JSON
// body. If usher's keys cannot be fetched at all, the answer is 503.
//
// What a token proves: usher admitted this visitor to this room within
// the last few minutes. It accepts only EdDSA signatures by a key in
// usher's key set, for the configured room (the "aud" claim), within
// "nbf" and "exp" (with a few seconds of leeway), and, when Options.Issuer
// is set, from that issuer. Keys are refreshed every few minutes, and at
// once (at most every 30 seconds) when a token names a key the cache does
// not hold, which is how usher's key rotation reaches the origin. When a
// refresh fails, the keys already held keep working.
//
// What it does not prove: that the request comes from the visitor's own
// browser. A token copied to another client works there until it expires
// (five minutes by default); its short life is the mitigation.
//
// Revoke ends the visitor's session from the origin (after checkout, for
// example) by telling usher in a response header.
//
// The package uses the standard library only.
package verify
