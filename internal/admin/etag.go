package admin

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
)

// etagOf returns the entity tag of a resource: a hash of its JSON, so
// that it changes exactly when the resource does (whoever changed it: the
// API, another node, a reload of the file).
func etagOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return `""`
	}
	sum := sha256.Sum256(b)
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`
}

// compactJSON returns v's JSON, "" for nil.
func compactJSON(v any) string {
	if v == nil {
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// ifMatch checks r's If-Match against the resource's current tag: "" when
// it matches (or is "*"), else the status and message to answer: 428
// without If-Match, 412 when stale.
func ifMatch(r *http.Request, current, what string) (int, string) {
	h := r.Header.Values("If-Match")
	if len(h) == 0 {
		return http.StatusPreconditionRequired, "If-Match is required: send the ETag of " + what +
			" from a GET (or * to change it whatever it is now)"
	}
	for _, line := range h {
		for tag := range strings.SplitSeq(line, ",") {
			tag = strings.TrimSpace(tag)
			if tag == "*" || tag == current {
				return 0, ""
			}
		}
	}
	return http.StatusPreconditionFailed, what + " changed since that ETag (now " + current +
		"): GET it again, check the change still makes sense, and retry"
}
