package admin

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/usherhq/usher"
)

// StatusFunc returns a room's live counters at now. An error that is an
// *usher.Error shows its message to the client; any other error is logged
// and shown as a generic message.
type StatusFunc func(ctx context.Context, room *usher.Room, now time.Time) (usher.RoomStats, error)

// Options configure a Handler.
type Options struct {
	// Token is the bearer token every path but GET /healthz requires. Empty
	// means no request is authorised (fail closed).
	Token string
	// Rooms returns the current rooms. Nil means no rooms.
	Rooms func() []*usher.Room
	// Status returns a room's live counters. Nil makes every room status
	// request fail with 503.
	Status StatusFunc
	// Metrics are served at GET /metrics. Nil means no /metrics path.
	Metrics *Metrics
	// Logger receives errors. Nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
	// Version is reported by GET /healthz.
	Version string
	// Invite makes invite links (nil: POST /v1/rooms/{id}/invites answers
	// 503).
	Invite InviteFunc
}

// healthzPattern is the only pattern served without a token.
const healthzPattern = "GET /healthz"

// Handler is the admin API's http.Handler. Build it with New.
type Handler struct {
	mux       *http.ServeMux
	tokenHash [sha256.Size]byte
	hasToken  bool
	rooms     func() []*usher.Room
	status    StatusFunc
	logger    *slog.Logger
	now       func() time.Time
	version   string
	invite    InviteFunc
}

var _ http.Handler = (*Handler)(nil)

// New returns the admin API handler for opts.
func New(opts Options) *Handler {
	h := &Handler{
		tokenHash: sha256.Sum256([]byte(opts.Token)),
		hasToken:  opts.Token != "",
		rooms:     opts.Rooms,
		status:    opts.Status,
		logger:    opts.Logger,
		now:       opts.Now,
		version:   opts.Version,
		invite:    opts.Invite,
	}
	if h.rooms == nil {
		h.rooms = func() []*usher.Room { return nil }
	}
	if h.logger == nil {
		h.logger = slog.Default()
	}
	if h.now == nil {
		h.now = time.Now
	}
	mux := http.NewServeMux()
	mux.HandleFunc(healthzPattern, h.serveHealthz)
	mux.HandleFunc("GET /v1/rooms", h.serveRooms)
	mux.HandleFunc("GET /v1/rooms/{id}/status", h.serveRoomStatus)
	mux.HandleFunc("POST /v1/rooms/{id}/invites", h.serveNewInvite)
	if opts.Metrics != nil {
		mux.Handle("GET /metrics", opts.Metrics.handler(h.logger))
	}
	h.mux = mux
	return h
}

// ServeHTTP checks the bearer token (except for GET /healthz) and routes the
// request. Unknown paths and wrong methods get JSON errors.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, pattern := h.mux.Handler(r)
	if pattern != healthzPattern {
		if msg, ok := h.authorize(r); !ok {
			w.Header().Set("WWW-Authenticate", "Bearer")
			writeError(w, http.StatusUnauthorized, usher.EUnauthorized, msg)
			return
		}
	}
	if pattern == "" {
		// The mux answers 404, 405 (with Allow) or a redirect to the clean
		// path; turn its plain-text errors into JSON ones.
		w = &jsonErrorWriter{ResponseWriter: w}
	}
	h.mux.ServeHTTP(w, r)
}

// authorize reports whether r carries the right bearer token, and if not,
// why.
func (h *Handler) authorize(r *http.Request) (string, bool) {
	header := r.Header.Get("Authorization")
	if header == "" {
		return "missing bearer token", false
	}
	scheme, token, _ := strings.Cut(header, " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "authorization must be a bearer token", false
	}
	// Hashing first makes the comparison constant-time in the token's
	// length too.
	got := sha256.Sum256([]byte(token))
	if subtle.ConstantTimeCompare(got[:], h.tokenHash[:]) != 1 || !h.hasToken {
		return "invalid bearer token", false
	}
	return "", true
}

func (h *Handler) serveHealthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, healthJSON{Status: "ok", Version: h.version})
}

type healthJSON struct {
	Status  string `json:"status"`
	Version string `json:"version"`
}
