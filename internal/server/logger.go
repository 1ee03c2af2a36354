package server

import (
	"context"
	"log/slog"
)

type loggerKey struct{}

// ContextWithLogger returns a copy of ctx that carries logger, for Error and
// other helpers that log on behalf of a component.
func ContextWithLogger(ctx context.Context, logger *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, logger)
}

// LoggerFrom returns the logger stored in ctx by ContextWithLogger, or
// slog.Default() when there is none.
func LoggerFrom(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok && l != nil {
		return l
	}
	return slog.Default()
}
