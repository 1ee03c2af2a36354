package redis

import (
	"errors"
	"fmt"
	"strings"

	"github.com/usherhq/usher"
	"github.com/valkey-io/valkey-go"
)

// transient are the prefixes of server errors that say the server cannot
// serve now, rather than that the request is wrong.
var transient = []string{
	"LOADING", "BUSY", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "READONLY",
	"OOM", "NOREPLICAS", "MOVED", "ASK", "NOAUTH", "WRONGPASS",
}

// fail wraps err from the call named op: usher.EUnavailable when the
// server could not be reached or cannot serve now, usher.EInternal when it
// answered with another error (a bug, or a key of the wrong type).
func fail(op string, err error) error {
	if verr, ok := valkey.IsValkeyErr(err); ok {
		msg := verr.Error()
		for _, p := range transient {
			if strings.HasPrefix(msg, p) {
				return fmt.Errorf("%w: %w", usher.Errorf(usher.EUnavailable, "redis: %s: server cannot serve", op), err)
			}
		}
		return fmt.Errorf("%w: %w", usher.Errorf(usher.EInternal, "redis: %s: server error", op), err)
	}
	if errors.As(err, new(replicasError)) {
		return fmt.Errorf("%w: %w", usher.Errorf(usher.EUnavailable, "redis: %s: not replicated", op), err)
	}
	return fmt.Errorf("%w: %w", usher.Errorf(usher.EUnavailable, "redis: %s: unreachable", op), err)
}

// malformed is the error for an answer of an unexpected shape.
func malformed(op string, format string, args ...any) error {
	return fmt.Errorf("%w: %s", usher.Errorf(usher.EInternal, "redis: %s: unexpected answer", op), fmt.Sprintf(format, args...))
}
