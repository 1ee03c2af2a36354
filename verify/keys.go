package verify

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// maxJWKSBytes bounds the key set read from usher.
const maxJWKSBytes = 1 << 20

// keySet is a fetched key set.
type keySet struct {
	keys    map[string]ed25519.PublicKey
	fetched time.Time
}

// key returns usher's public key with the id, fetching the key set when
// none is held, in the background when it is older than the refresh
// interval, and at once (at most every MinRefetchInterval) when it does
// not hold the id.
func (v *Verifier) key(ctx context.Context, kid string) (ed25519.PublicKey, error) {
	now := v.now()
	set := v.keys.Load()
	if set == nil {
		if err := v.wait(ctx, v.fetch(now, retryInterval)); err != nil {
			return nil, err
		}
		if set = v.keys.Load(); set == nil {
			return nil, v.unavailable()
		}
	} else if now.Sub(set.fetched) >= v.refresh {
		v.fetch(now, MinRefetchInterval) // in the background; this set serves meanwhile
	}
	if k, ok := set.keys[kid]; ok {
		return k, nil
	}
	if done := v.fetch(now, MinRefetchInterval); done != nil {
		if err := v.wait(ctx, done); err != nil {
			return nil, err
		}
		if k, ok := v.keys.Load().keys[kid]; ok {
			return k, nil
		}
	}
	return nil, fmt.Errorf("admission token: %w %q", ErrUnknownKey, kid)
}

// unavailable is the error when no key set is held.
func (v *Verifier) unavailable() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.lastErr != nil {
		return fmt.Errorf("admission token: %w: %v", ErrKeysUnavailable, v.lastErr)
	}
	return fmt.Errorf("admission token: %w", ErrKeysUnavailable)
}

// wait waits for a fetch to end, or for ctx. A nil channel (no fetch)
// returns at once.
func (v *Verifier) wait(ctx context.Context, done <-chan struct{}) error {
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("admission token: %w: %w", ErrKeysUnavailable, context.Cause(ctx))
	}
}

// fetch starts fetching the key set, unless a fetch is under way (then it
// returns that one's channel) or one started less than minInterval ago
// (then it returns nil). The channel is closed when the fetch ends.
func (v *Verifier) fetch(now time.Time, minInterval time.Duration) <-chan struct{} {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.running != nil {
		return v.running
	}
	if !v.tried.IsZero() && now.Sub(v.tried) < minInterval {
		return nil
	}
	done := make(chan struct{})
	v.running, v.tried = done, now
	go func() {
		// Not the request's context: the fetch serves every waiter, and
		// one request going away must not fail the others.
		ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
		defer cancel()
		keys, err := v.get(ctx)
		v.mu.Lock()
		defer v.mu.Unlock()
		if err == nil {
			// The set is as of the fetch's start: what a later clock
			// reading would add is only how long the fetch took.
			v.keys.Store(&keySet{keys: keys, fetched: now})
		}
		v.lastErr = err
		v.running = nil
		close(done)
	}()
	return done
}

// Refresh fetches the key set now, or waits for the fetch under way, and
// reports how it went. Call it at start-up to find a wrong JWKSURL early;
// the Verifier does not need it otherwise.
func (v *Verifier) Refresh(ctx context.Context) error {
	if err := v.wait(ctx, v.fetch(v.now(), 0)); err != nil {
		return err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.lastErr != nil {
		return fmt.Errorf("verify: %w: %v", ErrKeysUnavailable, v.lastErr)
	}
	return nil
}

// get fetches and reads the key set.
func (v *Verifier) get(ctx context.Context) (map[string]ed25519.PublicKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.jwksURL, nil)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", v.jwksURL, err)
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	resp, err := v.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", v.jwksURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("fetch %s: status %s", v.jwksURL, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", v.jwksURL, err)
	}
	if len(b) > maxJWKSBytes {
		return nil, fmt.Errorf("fetch %s: key set larger than %d bytes", v.jwksURL, maxJWKSBytes)
	}
	keys, err := parseJWKS(b)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", v.jwksURL, err)
	}
	return keys, nil
}

// parseJWKS reads the Ed25519 signing keys of a JSON Web Key Set (RFC
// 7517, keys as in RFC 8037). Keys of other types or uses are skipped; a
// set without a usable key, or with two keys of one id, is an error.
func parseJWKS(b []byte) (map[string]ed25519.PublicKey, error) {
	var set struct {
		Keys []struct {
			Kty string `json:"kty"`
			Crv string `json:"crv"`
			Alg string `json:"alg"`
			Use string `json:"use"`
			Kid string `json:"kid"`
			X   string `json:"x"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("key set: %w", err)
	}
	keys := make(map[string]ed25519.PublicKey, len(set.Keys))
	for _, k := range set.Keys {
		if k.Kty != "OKP" || k.Crv != "Ed25519" || (k.Alg != "" && k.Alg != algorithm) || (k.Use != "" && k.Use != "sig") {
			continue
		}
		if k.Kid == "" {
			return nil, errors.New("key set: an Ed25519 key has no kid")
		}
		x, err := b64.DecodeString(k.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("key set: key %q: x is not a %d-byte public key", k.Kid, ed25519.PublicKeySize)
		}
		if _, dup := keys[k.Kid]; dup {
			return nil, fmt.Errorf("key set: kid %q is used by two keys", k.Kid)
		}
		keys[k.Kid] = x
	}
	if len(keys) == 0 {
		return nil, errors.New("key set holds no Ed25519 signing key")
	}
	return keys, nil
}
