package admin

import (
	"embed"
	"net/http"

	"github.com/usherhq/usher"
)

// The dashboard: an HTML page, a script and a style sheet, embedded in the
// binary and served on the admin listener without a token (they hold no
// data). The page asks for a token and sends it in the Authorization
// header of every API call it makes (never in a URL, never in a cookie), so
// no other site can make the browser act with it.

//go:embed dashboard/index.html dashboard/app.js dashboard/app.css
var dashboardFS embed.FS

// Patterns served without a token.
const (
	dashboardPattern      = "GET /{$}"
	dashboardAssetPattern = "GET /dashboard/{file}"
)

// dashboardCSP is the page's Content-Security-Policy: its own script and
// style only, no inline code, network access to the admin listener only,
// no frames, no form submissions (the login form is read by the script).
const dashboardCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"

// dashboardAssets are the files served under /dashboard/, with their type.
var dashboardAssets = map[string]string{
	"app.js":  "text/javascript; charset=utf-8",
	"app.css": "text/css; charset=utf-8",
}

// routeDashboard registers the dashboard's paths and the calls only it
// needs.
func (h *Handler) routeDashboard(mux *http.ServeMux) {
	mux.HandleFunc(dashboardPattern, h.serveDashboard)
	mux.HandleFunc(dashboardAssetPattern, h.serveDashboardAsset)
	mux.Handle("GET /api/v1/live", h.liveSlots.guard(http.HandlerFunc(h.serveLive)))
	mux.HandleFunc("GET /api/v1/whoami", h.serveWhoami)
}

// public reports whether a pattern is served without a token.
func public(pattern string) bool {
	switch pattern {
	case healthzPattern, dashboardPattern, dashboardAssetPattern:
		return true
	}
	return false
}

// dashboardHeaders sets the headers of the dashboard's files.
func dashboardHeaders(w http.ResponseWriter, contentType string) {
	hdr := w.Header()
	hdr.Set("Content-Type", contentType)
	hdr.Set("Content-Security-Policy", dashboardCSP)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("X-Frame-Options", "DENY")
	hdr.Set("Referrer-Policy", "no-referrer")
	hdr.Set("Cross-Origin-Opener-Policy", "same-origin")
	hdr.Set("Cross-Origin-Resource-Policy", "same-origin")
	hdr.Set("Cache-Control", "no-cache")
}

func (h *Handler) serveDashboard(w http.ResponseWriter, r *http.Request) {
	b, err := dashboardFS.ReadFile("dashboard/index.html")
	if err != nil {
		writeError(w, http.StatusInternalServerError, usher.EInternal, "internal error")
		return
	}
	dashboardHeaders(w, "text/html; charset=utf-8")
	_, _ = w.Write(b)
}

func (h *Handler) serveDashboardAsset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	ct, ok := dashboardAssets[name]
	if !ok {
		writeError(w, http.StatusNotFound, usher.ENotFound, "no such path")
		return
	}
	b, err := dashboardFS.ReadFile("dashboard/" + name)
	if err != nil {
		writeError(w, http.StatusInternalServerError, usher.EInternal, "internal error")
		return
	}
	dashboardHeaders(w, ct)
	_, _ = w.Write(b)
}

// WhoamiView is GET /api/v1/whoami: the name and role of the token the
// request carries, so that a client knows whether it may write.
type WhoamiView struct {
	Name string `json:"name"`
	// Role is "read" or "write".
	Role string `json:"role"`
}

func (h *Handler) serveWhoami(w http.ResponseWriter, r *http.Request) {
	tok, msg := h.authorize(r)
	if tok == nil { // ServeHTTP checked it; be safe anyway
		writeError(w, http.StatusUnauthorized, usher.EUnauthorized, msg)
		return
	}
	role := "read"
	if tok.write {
		role = "write"
	}
	writeJSON(w, http.StatusOK, WhoamiView{Name: tok.name, Role: role})
}
