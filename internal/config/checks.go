package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/usherhq/usher/internal/ticket"
)

// The shapes of names. Compiled once; never changed.
var (
	roomIDPattern       = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)
	keyIDPattern        = regexp.MustCompile(`^[A-Za-z0-9_-]{1,16}$`)
	cookieSuffixPattern = regexp.MustCompile(`^[A-Za-z0-9_]{1,32}$`)
	languagePattern     = regexp.MustCompile(`^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$`)
	hostLabelPattern    = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$`)
)

// secretSize is the size of a ticket key's secret.
const secretSize = 32

// checkHostPort returns why s is not a listen address (host:port, the host
// optional), or "".
func checkHostPort(s string) string {
	if s == "" {
		return "required, like 127.0.0.1:8080"
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) && strings.HasPrefix(ae.Err, "missing port") {
			return fmt.Sprintf("missing port, got %q (like 127.0.0.1:8080)", s)
		}
		return fmt.Sprintf("must be host:port, got %q", s)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || port != strconv.FormatUint(n, 10) {
		return fmt.Sprintf("port must be a number from 0 to 65535, got %q", port)
	}
	if host == "" {
		return ""
	}
	if _, err := netip.ParseAddr(host); err != nil && !validHostname(host) {
		return fmt.Sprintf("host must be an IP address or host name, got %q", host)
	}
	return ""
}

// sameListener reports whether two valid listen addresses would take the
// same port: the same fixed port, on the same host or a wildcard host.
func sameListener(a, b string) bool {
	ah, ap, err1 := net.SplitHostPort(a)
	bh, bp, err2 := net.SplitHostPort(b)
	if err1 != nil || err2 != nil || ap != bp || ap == "0" {
		return false
	}
	wildcard := func(h string) bool { return h == "" || h == "0.0.0.0" || h == "::" }
	return strings.EqualFold(ah, bh) || wildcard(ah) || wildcard(bh)
}

// checkOrigin returns why s is not an origin (an absolute http or https
// URL with a host, without query or fragment), or "".
func checkOrigin(s string) string {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Opaque != "" {
		return fmt.Sprintf("must be an absolute http or https URL like http://127.0.0.1:3000, got %q", s)
	}
	switch {
	case u.Host == "" || u.Hostname() == "":
		return fmt.Sprintf("must name a host, got %q", s)
	case u.User != nil:
		return fmt.Sprintf("must not hold a user or password, got %q", s)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return fmt.Sprintf("must not have a query or fragment, got %q", s)
	}
	return ""
}

// checkRoutePath returns why p is not a route path, or "". Empty is valid:
// like "/", it matches every path.
func checkRoutePath(p string) string {
	switch {
	case p == "":
		return ""
	case !strings.HasPrefix(p, "/"):
		return `must start with "/"`
	case strings.Contains(p, ".."):
		return `must not contain ".."`
	case strings.Contains(p, "//"):
		return `must not contain "//"`
	case strings.ContainsAny(p, "?#"):
		return `must not contain "?" or "#" (a route matches a path, not a query)`
	case strings.IndexFunc(p, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
		return "must not contain spaces or control characters"
	}
	return ""
}

// checkHost returns why h is not a route host (a host name or IP address,
// without scheme, port or path), or "".
func checkHost(h string) string {
	if _, err := netip.ParseAddr(h); err == nil {
		return ""
	}
	switch {
	case strings.Contains(h, "://"):
		return fmt.Sprintf("must be a host name without a scheme, got %q", h)
	case strings.ContainsAny(h, "/?#"):
		return fmt.Sprintf("must be a host name without a path, got %q", h)
	case strings.Contains(h, ":"):
		return fmt.Sprintf("must be a host name without a port (the port is ignored when matching), got %q", h)
	case !validHostname(h):
		return fmt.Sprintf("must be a host name like shop.example.com, got %q", h)
	}
	return ""
}

// validHostname reports whether h is a DNS host name.
func validHostname(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for label := range strings.SplitSeq(h, ".") {
		if !hostLabelPattern.MatchString(label) {
			return false
		}
	}
	return true
}

// decodeSecret decodes a key secret as the ticket ring reads it (64 hex
// characters, or base64, standard or URL-safe, padded or not), with the
// reason in config terms when it does not.
func decodeSecret(s string) ([]byte, error) {
	b, err := ticket.DecodeSecret(s)
	if err == nil {
		return b, nil
	}
	if strings.Contains(err.Error(), "neither") {
		return nil, errors.New("must be 32 bytes written in base64 or as 64 hex digits, got something that is neither")
	}
	_, n, _ := strings.Cut(err.Error(), "got ")
	return nil, fmt.Errorf("must be 32 bytes (base64 or hex), got %s", n)
}
