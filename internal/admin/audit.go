package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/usherhq/usher"
)

// AuditView is GET /api/v1/audit: entries newest first.
type AuditView struct {
	Entries []AuditEntry `json:"entries"`
	// NextBefore, when not 0, is the before that reads the next page.
	NextBefore int64 `json:"next_before"`
}

// The audit log's paging.
const (
	defaultAuditLimit = 50
	maxAuditLimit     = 1000
	auditBatch        = 200
)

// serveAudit reads the audit log: ?room= keeps one room's entries,
// ?limit= (1 to 1000, default 50), ?before=VERSION pages back.
func (h *Handler) serveAudit(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := defaultAuditLimit
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxAuditLimit {
			invalid("limit", "limit: must be from 1 to %d, got %q", maxAuditLimit, s).write(w)
			return
		}
		limit = n
	}
	var before int64
	if s := q.Get("before"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 {
			invalid("before", "before: must be a version (a positive integer), got %q", s).write(w)
			return
		}
		before = n
	}
	room := q.Get("room")
	ctx, cancel := context.WithTimeout(r.Context(), writeTimeout)
	defer cancel()
	out := AuditView{Entries: []AuditEntry{}}
	more := true // whether records older than before may exist
	// A room's entries may be sparse: read on in batches, at most the
	// whole log.
	for scanned := 0; more && len(out.Entries) < limit && scanned < usher.AuditKeep; {
		n := limit - len(out.Entries)
		if room != "" {
			n = auditBatch
		}
		recs, err := h.layers.store.ReadAudit(ctx, before, n)
		if err != nil {
			h.storeError(r, err).write(w)
			return
		}
		scanned += len(recs)
		more = len(recs) == n
		for k, rec := range recs {
			before = rec.Version
			var e AuditEntry
			if err := json.Unmarshal(rec.Data, &e); err != nil {
				e = AuditEntry{Action: "unreadable", Before: string(rec.Data)}
			}
			e.Version = rec.Version
			if room != "" && e.Room != room {
				continue
			}
			out.Entries = append(out.Entries, e)
			if len(out.Entries) == limit {
				more = more || k < len(recs)-1
				break
			}
		}
	}
	if more {
		out.NextBefore = before
	}
	writeJSON(w, http.StatusOK, out)
}
