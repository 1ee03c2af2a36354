package admin

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/analytics"
	"github.com/usherhq/usher/internal/autopilot"
	"github.com/usherhq/usher/internal/notify"
)

// StatusFunc returns a room's live counters at now. An error that is an
// *usher.Error shows its message to the client; any other error is logged
// and shown as a generic message.
type StatusFunc func(ctx context.Context, room *usher.Room, now time.Time) (usher.RoomStats, error)

// Options configure a Handler.
type Options struct {
	// Token is the bearer token every path but GET /healthz requires: a
	// write token named "admin". Empty, with no Tokens, means no request
	// is authorised (fail closed).
	Token string
	// Tokens are more tokens, each named and either read-only (GET and
	// HEAD) or read-write.
	Tokens []Token
	// Layers are the running config's file and runtime layers. With them,
	// /api/v1 serves and changes rooms, events and rules and reads the
	// audit log; nil serves the read-only /v1 paths and health only.
	Layers *Layers
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
	// Autopilot returns the state of a room's autopilot, if it governs the
	// room (nil: none does).
	Autopilot func(room string) (autopilot.State, bool)
	// Changed, when set, is called with the audit entry of every change
	// made through the API, once it is stored and in force on this node
	// (the events' room.settings_changed). It must not block.
	Changed func(AuditEntry)
	// Events, when set, serves GET /api/v1/stream: the event stream
	// (server-sent events) of the bus.
	Events *notify.Bus
	// Analytics reads the rooms' analytics (the store; nil: GET
	// /api/v1/rooms/{id}/analytics answers 503).
	Analytics analytics.Reader
	// LiveSlots and EventSlots bound the live streams (GET /api/v1/live)
	// and the event streams (GET /api/v1/stream) open at once, in all,
	// per token, and kept for write tokens. Zero fields take the
	// defaults (64 in all, 16 per token, 16 kept for write tokens).
	LiveSlots, EventSlots StreamSlots
}

// Token is a named admin bearer token.
type Token struct {
	// Name names the token in the audit log and the logs.
	Name string
	// Secret is what the client sends.
	Secret string
	// Write allows every method; false allows GET and HEAD only.
	Write bool
}

// healthzPattern is the only pattern served without a token.
const healthzPattern = "GET /healthz"

// Handler is the admin API's http.Handler. Build it with New.
type Handler struct {
	pilot     func(room string) (autopilot.State, bool)
	mux       *http.ServeMux
	tokens    []tokenHash
	layers    *Layers
	rooms     func() []*usher.Room
	status    StatusFunc
	logger    *slog.Logger
	now       func() time.Time
	version   string
	invite    InviteFunc
	live      *liveHub
	changed   func(AuditEntry)
	events    *notify.Bus
	analytics analytics.Reader
	// liveSlots and eventSlots share the streams out among tokens.
	liveSlots, eventSlots *streamSlots
}

var _ http.Handler = (*Handler)(nil)

// New returns the admin API handler for opts.
func New(opts Options) *Handler {
	h := &Handler{
		pilot:      opts.Autopilot,
		tokens:     hashTokens(opts.Token, opts.Tokens),
		layers:     opts.Layers,
		rooms:      opts.Rooms,
		status:     opts.Status,
		logger:     opts.Logger,
		now:        opts.Now,
		version:    opts.Version,
		invite:     opts.Invite,
		changed:    opts.Changed,
		events:     opts.Events,
		analytics:  opts.Analytics,
		liveSlots:  newStreamSlots("live", opts.LiveSlots),
		eventSlots: newStreamSlots("event", opts.EventSlots),
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
	h.routeAPI(mux)
	h.routeDashboard(mux)
	h.live = newLiveHub(h.readLive, liveInterval, max(liveMaxSubscribers, h.liveSlots.max.Total))
	if opts.Metrics != nil {
		mux.Handle("GET /metrics", opts.Metrics.handler(h.logger))
		if err := opts.Metrics.registry.Register(&liveCollector{h.live}); err != nil {
			h.logger.Warn("the live stream's metrics are registered already (one admin handler per Metrics)", "err", err)
		}
		if err := opts.Metrics.registry.Register(&slotsCollector{[]*streamSlots{h.liveSlots, h.eventSlots}}); err != nil {
			h.logger.Warn("the stream slots' metrics are registered already (one admin handler per Metrics)", "err", err)
		}
	}
	h.mux = mux
	return h
}

// ServeHTTP checks the bearer token (except for GET /healthz and the
// dashboard's page and files) and routes the
// request. Unknown paths and wrong methods get JSON errors.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, pattern := h.mux.Handler(r)
	if !public(pattern) {
		tok, msg := h.authorize(r)
		if tok == nil {
			w.Header().Set("WWW-Authenticate", "Bearer")
			writeError(w, http.StatusUnauthorized, usher.EUnauthorized, msg)
			return
		}
		if !tok.write && r.Method != http.MethodGet && r.Method != http.MethodHead {
			writeError(w, http.StatusForbidden, usher.EForbidden,
				fmt.Sprintf("token %q may only read (GET); %s needs a write token", tok.name, r.Method))
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), tokenKey{}, tokenScope{tok.name, tok.write}))
	}
	if pattern == "" {
		// The mux answers 404, 405 (with Allow) or a redirect to the clean
		// path; turn its plain-text errors into JSON ones.
		w = &jsonErrorWriter{ResponseWriter: w}
	}
	h.mux.ServeHTTP(w, r)
}

// tokenHash is a token as the handler keeps it.
type tokenHash struct {
	hash  [sha256.Size]byte
	name  string
	write bool
}

// hashTokens returns the tokens to accept: token (a write token named
// admin) when set, then tokens; empty secrets are left out.
func hashTokens(token string, tokens []Token) []tokenHash {
	var out []tokenHash
	if token != "" {
		out = append(out, tokenHash{sha256.Sum256([]byte(token)), "admin", true})
	}
	for _, t := range tokens {
		if t.Secret != "" {
			out = append(out, tokenHash{sha256.Sum256([]byte(t.Secret)), t.Name, t.Write})
		}
	}
	return out
}

// tokenKey is the context key of the tokenScope of the token a request
// carries.
type tokenKey struct{}

// tokenScope is a token's name and whether it may write.
type tokenScope struct {
	name  string
	write bool
}

// tokenName returns the name of the token that authorised r.
func tokenName(r *http.Request) string {
	ts, _ := r.Context().Value(tokenKey{}).(tokenScope)
	return ts.name
}

// tokenWrites reports whether the token that authorised r may write.
func tokenWrites(r *http.Request) bool {
	ts, _ := r.Context().Value(tokenKey{}).(tokenScope)
	return ts.write
}

// authorize returns the token r carries, or nil and why not.
func (h *Handler) authorize(r *http.Request) (*tokenHash, string) {
	header := r.Header.Get("Authorization")
	if header == "" {
		return nil, "missing bearer token"
	}
	scheme, token, _ := strings.Cut(header, " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		return nil, "authorization must be a bearer token"
	}
	// Hashing first makes the comparison constant-time in the token's
	// length too; every token is compared, so the time does not say which
	// one matched.
	got := sha256.Sum256([]byte(token))
	var found *tokenHash
	for i := range h.tokens {
		if subtle.ConstantTimeCompare(got[:], h.tokens[i].hash[:]) == 1 {
			found = &h.tokens[i]
		}
	}
	if found == nil {
		return nil, "invalid bearer token"
	}
	return found, ""
}

func (h *Handler) serveHealthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, healthJSON{Status: "ok", Version: h.version})
}

type healthJSON struct {
	Status  string `json:"status"`
	Version string `json:"version"`
}
