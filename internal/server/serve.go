package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Timeouts of the servers Serve runs.
const (
	// ReadHeaderTimeout bounds how long a client may take to send the
	// request headers (slowloris). Bodies are not bounded here: uploads
	// through the proxy may be slow and large; answers usher makes itself
	// (waiting page, errors, its own paths) close the connection instead
	// of reading a body they do not need (gate.dropBody).
	ReadHeaderTimeout = 10 * time.Second
	// IdleTimeout closes keep-alive connections idle that long.
	IdleTimeout = 120 * time.Second
	// MaxHeaderBytes bounds a request's headers (net/http's default is 1
	// MB; browsers send a few KB).
	MaxHeaderBytes = 64 << 10
	// ShutdownTimeout is how long Serve waits, once ctx is done, for
	// requests in flight to finish before closing their connections
	// (long event streams are cut at that point).
	ShutdownTimeout = 15 * time.Second
)

// Serve serves handler on ln until ctx is done, then shuts down gracefully:
// it stops accepting, lets requests in flight finish for up to
// ShutdownTimeout, and closes what remains. It returns nil after a shutdown
// caused by ctx, and the server's error if it stops for another reason. ln
// is closed on return. A nil logger means slog.Default(); the server's own
// errors (TLS handshakes, bad requests) go to it at Warn level.
func Serve(ctx context.Context, ln net.Listener, handler http.Handler, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.Default()
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: ReadHeaderTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	addr := ln.Addr().String()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	logger.Info("listening", "addr", addr)

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down", "addr", addr)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Warn("graceful shutdown cut short", "addr", addr, "error", err)
		_ = srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
