package usher

import (
	"errors"
	"fmt"
)

// Error codes, mapped to HTTP statuses once at the edge.
const (
	EInvalid      = "invalid"      // bad input: 400
	ENotFound     = "not_found"    // no such thing: 404
	EUnavailable  = "unavailable"  // state unreachable: 503
	EInternal     = "internal"     // a bug: 500
	EUnauthorized = "unauthorized" // 401
	EForbidden    = "forbidden"    // 403
	EMisdirected  = "misdirected"  // a host no route serves: 421
	ETooMany      = "too_many"     // a client over its limit: 429
	EConflict     = "conflict"     // changed meanwhile, or clashes: 409
)

// Error is a domain error whose Message may be shown to the client.
type Error struct {
	Code    string
	Message string
}

// Error implements the error interface.
func (e *Error) Error() string { return fmt.Sprintf("usher: %s: %s", e.Code, e.Message) }

// Errorf returns an *Error with the code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of err's *Error, EInternal for other errors and
// "" for nil.
func ErrorCode(err error) string {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Code
	}
	return EInternal
}

// ErrorMessage returns the message of err's *Error, or "internal error".
func ErrorMessage(err error) string {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Message
	}
	return "internal error"
}
