package admin

import (
	"encoding/json"
	"net/http"

	"github.com/usherhq/usher"
)

// Error codes of the admin API that have no usher.Error equivalent.
const codeMethodNotAllowed = "method_not_allowed"

type errorJSON struct {
	Error errorBody `json:"error"`
}

type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Field names the field at fault, as the config file does, when there
	// is one ("total_active_users", "events[1].event_start_time").
	Field string `json:"field,omitempty"`
	// Problems lists every problem when there are several.
	Problems []ProblemJSON `json:"problems,omitempty"`
}

// ProblemJSON is one problem of an invalid request.
type ProblemJSON struct {
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// writeJSON writes v as the JSON body of a response with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal","message":"internal error"}}`)
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "application/json; charset=utf-8")
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// writeError writes a JSON error response.
func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, errorJSON{Error: errorBody{Code: code, Message: message}})
}

// jsonErrorWriter replaces the ServeMux's plain-text 404 and 405 responses
// with JSON errors; other responses (redirects) pass through.
type jsonErrorWriter struct {
	http.ResponseWriter
	swallow bool
}

func (w *jsonErrorWriter) WriteHeader(status int) {
	switch status {
	case http.StatusNotFound:
		w.swallow = true
		w.Header().Del("Content-Length")
		writeError(w.ResponseWriter, status, usher.ENotFound, "no such path")
	case http.StatusMethodNotAllowed:
		w.swallow = true
		w.Header().Del("Content-Length")
		msg := "method not allowed"
		if allow := w.Header().Get("Allow"); allow != "" {
			msg += "; allowed: " + allow
		}
		writeError(w.ResponseWriter, status, codeMethodNotAllowed, msg)
	default:
		w.ResponseWriter.WriteHeader(status)
	}
}

func (w *jsonErrorWriter) Write(b []byte) (int, error) {
	if w.swallow {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *jsonErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
