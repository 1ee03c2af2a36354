// Package ticket seals the visitor's ticket (usher.Ticket) into a cookie
// value and opens it again.
//
// A sealed ticket is versioned, names the key that sealed it, and is
// encrypted and authenticated with XChaCha20-Poly1305 under additional data
// that binds it to its room and cookie name, so a ticket from one room or
// cookie never opens in another. A Ring holds the keys: its first key seals
// and all of them open, which lets operators rotate keys without sending
// visitors to the back of the line. Anything that fails to open is reported
// as ErrInvalid and treated by the caller as a new visitor.
package ticket
