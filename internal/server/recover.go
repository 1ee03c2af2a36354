package server

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
)

// Recover returns middleware that turns a panic in next into a logged error
// (with the request id and the stack) and a branded 500, so that one bad
// request never takes the process down. When the response had already
// started, the connection is aborted instead (panic(http.ErrAbortHandler)),
// so the client sees a truncated answer rather than a seemingly complete
// one. http.ErrAbortHandler itself passes through unlogged. A nil logger
// means slog.Default().
func Recover(logger *slog.Logger, next http.Handler) http.Handler {
	if logger == nil {
		logger = slog.Default()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw := &trackingWriter{ResponseWriter: w}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			logger.LogAttrs(r.Context(), slog.LevelError, "panic serving request",
				slog.String("request_id", RequestIDFrom(r.Context())),
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.String("panic", fmt.Sprint(v)),
				slog.String("stack", string(debug.Stack())),
			)
			if tw.wrote {
				panic(http.ErrAbortHandler)
			}
			WriteError(w, r, http.StatusInternalServerError, "internal error")
		}()
		next.ServeHTTP(tw, r)
	})
}

// trackingWriter records whether the response has started. It unwraps for
// http.ResponseController (hijack, deadlines) and flushes through.
type trackingWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *trackingWriter) WriteHeader(code int) {
	if code >= 200 || code == http.StatusSwitchingProtocols {
		w.wrote = true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *trackingWriter) Write(p []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(p)
}

// Flush implements http.Flusher.
func (w *trackingWriter) Flush() {
	w.wrote = true
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap returns the wrapped writer, for http.ResponseController.
func (w *trackingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
