package server

import (
	"encoding/json"
	"html/template"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/usherhq/usher"
)

// RetryAfterSeconds is the Retry-After WriteError sets on a 503 that has
// none.
const RetryAfterSeconds = 5

// StatusCode returns the HTTP status for a usher.Error code: invalid 400,
// unauthorized 401, forbidden 403, not_found 404, misdirected 421, too_many 429,
// unavailable 503, anything else 500.
func StatusCode(code string) int {
	switch code {
	case usher.EForbidden:
		return http.StatusForbidden
	case usher.EMisdirected:
		return http.StatusMisdirectedRequest
	case usher.ETooMany:
		return http.StatusTooManyRequests
	case usher.EInvalid:
		return http.StatusBadRequest
	case usher.EUnauthorized:
		return http.StatusUnauthorized
	case usher.ENotFound:
		return http.StatusNotFound
	case usher.EUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// Error answers err: the status from its usher.Error code (StatusCode), the
// error's message to the client (usher.ErrorMessage: "internal error" for
// errors that are not a usher.Error), as JSON when the request accepts it
// and as a small page otherwise. The full error and the request id go to
// the logger of the request's context (LoggerFrom): at Error level for 5xx,
// at Debug level for 4xx, which are the client's business.
func Error(w http.ResponseWriter, r *http.Request, err error) {
	code := usher.ErrorCode(err)
	status := StatusCode(code)
	level := slog.LevelDebug
	if status >= 500 {
		level = slog.LevelError
	}
	LoggerFrom(r.Context()).LogAttrs(r.Context(), level, "request failed",
		slog.String("request_id", RequestIDFrom(r.Context())),
		slog.Int("status", status),
		slog.String("code", code),
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.Any("error", err),
	)
	WriteError(w, r, status, usher.ErrorMessage(err))
}

// WriteError writes an error answer with status and message, as JSON
// ({"error": message, "status": status, "request_id": id}) when the request
// accepts application/json and as a small branded page otherwise. It does
// not log. Headers already set on w (Set-Cookie, Retry-After) are kept; a
// 503 without Retry-After gets RetryAfterSeconds.
func WriteError(w http.ResponseWriter, r *http.Request, status int, message string) {
	h := w.Header()
	h.Del("Content-Length")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if status == http.StatusServiceUnavailable && h.Get("Retry-After") == "" {
		h.Set("Retry-After", strconv.Itoa(RetryAfterSeconds))
	}
	id := RequestIDFrom(r.Context())
	if AcceptsJSON(r) {
		h.Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(struct {
			Error     string `json:"error"`
			Status    int    `json:"status"`
			RequestID string `json:"request_id,omitempty"`
		}{message, status, id})
		return
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	_ = errorPage.Execute(w, struct {
		Status    int
		Title     string
		Message   string
		RequestID string
	}{status, http.StatusText(status), message, id})
}

// AcceptsJSON reports whether the request's Accept header lists
// application/json (or a +json type) with a non-zero quality.
func AcceptsJSON(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			mt, params, _ := strings.Cut(part, ";")
			mt = strings.ToLower(strings.TrimSpace(mt))
			if mt != "application/json" && !(strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")) {
				continue
			}
			if !zeroQuality(params) {
				return true
			}
		}
	}
	return false
}

// zeroQuality reports whether media type parameters say q=0.
func zeroQuality(params string) bool {
	for p := range strings.SplitSeq(params, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "q") {
			continue
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		return err == nil && q == 0
	}
	return false
}

// sentence makes a lowercase error message read as a sentence: first letter
// upper case, a full stop at the end.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	if c := s[0]; 'a' <= c && c <= 'z' {
		s = string(c-'a'+'A') + s[1:]
	}
	if !strings.HasSuffix(s, ".") && !strings.HasSuffix(s, "!") && !strings.HasSuffix(s, "?") {
		s += "."
	}
	return s
}

// errorPage is the branded error page. It is self-contained (no external
// requests) and matches the look of the waiting page in internal/web.
var errorPage = template.Must(template.New("error").Funcs(template.FuncMap{"sentence": sentence}).Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<link rel="icon" href="data:,">
<title>{{.Status}} {{.Title}}</title>
<style>
:root{color-scheme:light dark;--bg:#f5f6f8;--card:#fff;--fg:#1d2330;--muted:#5b6474;--accent:#3554d1}
@media (prefers-color-scheme:dark){:root{--bg:#12151b;--card:#1b2029;--fg:#e8ebf1;--muted:#a3acbb;--accent:#8ea2ff}}
*{box-sizing:border-box}
body{margin:0;min-height:100vh;display:flex;align-items:center;justify-content:center;padding:1rem;background:var(--bg);color:var(--fg);font:1rem/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
main{width:100%;max-width:32rem;background:var(--card);border-radius:12px;padding:2rem 1.5rem;box-shadow:0 1px 3px rgba(0,0,0,.12)}
h1{margin:0 0 .5rem;font-size:1.4rem}
p{margin:.5rem 0}
.muted{color:var(--muted);font-size:.875rem}
.brand{color:var(--accent);font-weight:600;letter-spacing:.02em}
</style>
</head>
<body>
<main>
<p class="muted brand">usher</p>
<h1>{{.Title}}</h1>
<p>{{sentence .Message}}</p>
{{- if .RequestID}}
<p class="muted">Error {{.Status}}, request {{.RequestID}}</p>
{{- end}}
</main>
</body>
</html>
`))
