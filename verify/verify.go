package verify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Options.
const (
	// DefaultHeader is the request header usher puts the token in.
	DefaultHeader = "X-Usher-Admission"
	// DefaultRefreshInterval is how often the key set is fetched again.
	DefaultRefreshInterval = 5 * time.Minute
	// DefaultLeeway is the clock skew allowed on exp and nbf.
	DefaultLeeway = 5 * time.Second
	// MinRefetchInterval is the least time between two fetches of the key
	// set caused by tokens that name an unknown key, so that a flood of
	// forged key ids cannot make the Verifier hammer usher.
	MinRefetchInterval = 30 * time.Second
)

// fetchTimeout bounds one fetch of the key set.
const fetchTimeout = 10 * time.Second

// retryInterval is the least time between two fetches while no key set
// has been fetched yet.
const retryInterval = time.Second

// Options configure a Verifier. JWKSURL and Room are required.
type Options struct {
	// JWKSURL is where usher publishes its keys, an absolute http or
	// https URL ending in /__usher/jwks.json. Required.
	JWKSURL string
	// Room is the id of the room tokens must be for (their audience).
	// Required.
	Room string
	// Issuer, when set, is the "iss" tokens must carry (usher's public
	// URL if it is configured with one, else "usher"). Empty: not checked.
	Issuer string
	// Header is the request header that carries the token; empty means
	// DefaultHeader.
	Header string
	// RoomURL is where the middleware sends a browser without a valid
	// token (302 for GET and HEAD requests that accept text/html): the
	// room's page on usher, usually the site's address through usher.
	// Empty: every such request gets 401.
	RoomURL string
	// HTTPClient fetches the key set; nil means a client with a
	// 10-second timeout.
	HTTPClient *http.Client
	// RefreshInterval is how long fetched keys are used before they are
	// fetched again (in the background; the old keys serve meanwhile and
	// after a failed fetch). Zero means DefaultRefreshInterval.
	RefreshInterval time.Duration
	// Leeway is the clock skew allowed on exp and nbf. Zero means
	// DefaultLeeway; negative means none.
	Leeway time.Duration
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// Verifier checks usher's admission tokens for one room. It is safe for
// concurrent use; make one per room and keep it.
type Verifier struct {
	jwksURL string
	room    string
	issuer  string
	header  string
	roomURL string
	client  *http.Client
	refresh time.Duration
	leeway  time.Duration
	now     func() time.Time

	keys atomic.Pointer[keySet] // nil until the first fetch succeeds

	mu      sync.Mutex
	running chan struct{} // closed when the fetch under way ends; nil when none
	tried   time.Time     // when the last fetch started
	lastErr error         // how the last fetch failed, nil if it did not
}

// New returns a Verifier. It checks the options but does not fetch the
// keys: the first token does, or Refresh.
func New(opts Options) (*Verifier, error) {
	var errs []error
	u, err := url.Parse(opts.JWKSURL)
	switch {
	case opts.JWKSURL == "":
		errs = append(errs, errors.New("JWKSURL is required"))
	case err != nil:
		errs = append(errs, fmt.Errorf("JWKSURL: %w", err))
	case (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		errs = append(errs, fmt.Errorf("JWKSURL %q: must be an absolute http or https URL", opts.JWKSURL))
	}
	if opts.Room == "" {
		errs = append(errs, errors.New("room is required"))
	}
	if opts.RoomURL != "" {
		if err := checkRoomURL(opts.RoomURL); err != nil {
			errs = append(errs, err)
		}
	}
	if opts.Header != "" && !validHeaderName(opts.Header) {
		errs = append(errs, fmt.Errorf("header %q: not a valid header name", opts.Header))
	}
	if opts.RefreshInterval < 0 {
		errs = append(errs, fmt.Errorf("RefreshInterval must not be negative, got %s", opts.RefreshInterval))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("verify: %w", errors.Join(errs...))
	}
	v := &Verifier{
		jwksURL: opts.JWKSURL,
		room:    opts.Room,
		issuer:  opts.Issuer,
		header:  opts.Header,
		roomURL: opts.RoomURL,
		client:  opts.HTTPClient,
		refresh: opts.RefreshInterval,
		leeway:  opts.Leeway,
		now:     opts.Now,
	}
	if v.header == "" {
		v.header = DefaultHeader
	}
	if v.client == nil {
		v.client = &http.Client{Timeout: fetchTimeout}
	}
	if v.refresh == 0 {
		v.refresh = DefaultRefreshInterval
	}
	switch {
	case v.leeway == 0:
		v.leeway = DefaultLeeway
	case v.leeway < 0:
		v.leeway = 0
	}
	if v.now == nil {
		v.now = time.Now
	}
	return v, nil
}

// checkRoomURL accepts an absolute http(s) URL or a path starting with
// one slash.
func checkRoomURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("RoomURL: %w", err)
	}
	if u.Scheme == "" && u.Host == "" && strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "//") && !strings.HasPrefix(s, "/\\") {
		return nil
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("RoomURL %q: must be an absolute http or https URL or a path", s)
	}
	return nil
}

func validHeaderName(s string) bool {
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return s != ""
}

// Room returns the room the Verifier checks tokens for.
func (v *Verifier) Room() string { return v.room }

// Verify checks a token (the header's value) and returns its claims. If
// the keys must be fetched first, it waits at most 10 seconds; use
// VerifyContext to bound it otherwise. The error wraps one of the Err
// values and says what failed.
func (v *Verifier) Verify(token string) (Claims, error) {
	return v.VerifyContext(context.Background(), token)
}

// VerifyContext is Verify that stops waiting for the keys when ctx ends.
func (v *Verifier) VerifyContext(ctx context.Context, token string) (Claims, error) {
	t, err := parseToken(token)
	if err != nil {
		return Claims{}, err
	}
	key, err := v.key(ctx, t.kid)
	if err != nil {
		return Claims{}, err
	}
	if err := t.verifySignature(key); err != nil {
		return Claims{}, err
	}
	return t.check(v.issuer, v.room, v.now(), v.leeway)
}
