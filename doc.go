// Package usher holds the domain of the usher virtual waiting room: rooms and
// their settings, the visitor's ticket, the decision the gate makes for a
// request, the contract between the admission engine and its state (Store),
// and the domain error. It imports only the standard library; every concrete
// implementation lives under internal/.
package usher
