package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// item is one event waiting for a webhook.
type item struct {
	id, typ, room string
	body          []byte
	at            time.Time // when it was published
}

// webhook is one webhook's queue and worker.
type webhook struct {
	bus   *Bus
	cfg   atomic.Pointer[WebhookConfig]
	queue chan item
	quit  chan struct{}
	once  sync.Once

	pending                                      atomic.Int64 // queued or being delivered
	delivered, failed, refused, retries, dropped atomic.Int64
	lastDropLog                                  atomic.Int64 // unix second of the last drop logged
}

func (h *webhook) config() *WebhookConfig { return h.cfg.Load() }

// start starts a webhook's worker; b.mu is held.
func (b *Bus) start(c *WebhookConfig) *webhook {
	h := &webhook{bus: b, queue: make(chan item, c.MaxQueue), quit: make(chan struct{})}
	h.cfg.Store(c)
	b.wg.Go(h.run)
	return h
}

// stop ends the worker; what is queued is dropped and counted.
func (h *webhook) stop() { h.once.Do(func() { close(h.quit) }) }

// enqueue queues it, or drops it when the queue is full.
func (h *webhook) enqueue(it item) {
	select {
	case <-h.quit:
		h.drop(it, "the webhook stopped")
		return
	default:
	}
	h.pending.Add(1)
	select {
	case h.queue <- it:
	default:
		h.pending.Add(-1)
		h.drop(it, "queue full")
	}
}

// drop counts a dropped event, logging at most one drop a second.
func (h *webhook) drop(it item, why string) {
	h.dropped.Add(1)
	now := h.bus.opts.Now().Unix()
	if last := h.lastDropLog.Load(); last != now && h.lastDropLog.CompareAndSwap(last, now) {
		c := h.config()
		h.bus.log.Warn("webhook event dropped", "room", c.Room, "webhook", c.Name, "reason", why,
			"type", it.typ, "dropped_total", h.dropped.Load())
	}
}

func (h *webhook) run() {
	defer func() {
		for {
			select {
			case it := <-h.queue:
				h.drop(it, "the webhook stopped")
				h.pending.Add(-1)
			default:
				return
			}
		}
	}()
	for {
		select {
		case <-h.quit:
			return
		case <-h.bus.ctx.Done():
			return
		case it := <-h.queue:
			h.deliver(it)
			h.pending.Add(-1)
		}
	}
}

// outcome is what one attempt came to.
type outcome int

const (
	sent      outcome = iota // 2xx
	retryable                // network error, timeout, 408, 429, 5xx
	refused                  // any other answer: not retried
)

// deliver tries it until it is delivered, refused, or every attempt
// failed; it gives up early when the webhook stops.
func (h *webhook) deliver(it item) {
	b := h.bus
	for attempt := 1; ; attempt++ {
		c := h.config()
		res, wait, why := h.attempt(c, it, attempt)
		switch res {
		case sent:
			h.delivered.Add(1)
			b.latency.WithLabelValues(c.Room, c.Name).Observe(b.opts.Now().Sub(it.at).Seconds())
			return
		case refused:
			h.refused.Add(1)
			b.log.Warn("webhook delivery refused by the receiver; not retried", "room", c.Room, "webhook", c.Name,
				"type", it.typ, "delivery", it.id, "attempt", attempt, "reason", why)
			return
		}
		if attempt >= b.opts.MaxAttempts {
			h.failed.Add(1)
			b.log.Warn("webhook delivery failed; given up", "room", c.Room, "webhook", c.Name,
				"type", it.typ, "delivery", it.id, "attempts", attempt, "reason", why)
			return
		}
		d := b.backoff(attempt)
		if wait > d {
			d = min(wait, b.opts.MaxBackoff)
		}
		b.log.Debug("webhook delivery failed; retrying", "room", c.Room, "webhook", c.Name,
			"delivery", it.id, "attempt", attempt, "reason", why, "retry_in", d)
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-h.quit:
			t.Stop()
			h.drop(it, "the webhook stopped")
			return
		case <-b.ctx.Done():
			t.Stop()
			h.drop(it, "usher stopped")
			return
		}
		h.retries.Add(1)
	}
}

// backoff is the wait after failed attempt n (1 for the first): the base
// doubled per attempt, at most the maximum, less a random share of up to
// half (jitter, so that webhooks failing together do not retry together).
func (b *Bus) backoff(n int) time.Duration {
	d := b.opts.MaxBackoff
	if n-1 < 30 {
		d = min(b.opts.Backoff<<(n-1), b.opts.MaxBackoff)
	}
	return d - time.Duration(rand.Int64N(int64(d/2)+1))
}

// attempt posts it once and says what came of it, with the receiver's
// Retry-After when it asked for one.
func (h *webhook) attempt(c *WebhookConfig, it item, n int) (outcome, time.Duration, string) {
	b := h.bus
	ctx, cancel := context.WithTimeout(b.ctx, c.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(it.body))
	if err != nil {
		return refused, 0, "the URL cannot be used: " + Target(c.URL)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", b.opts.UserAgent)
	req.Header.Set(HeaderEvent, it.typ)
	req.Header.Set(HeaderDelivery, it.id)
	req.Header.Set(HeaderAttempt, strconv.Itoa(n))
	req.Header.Set(HeaderSignature, Sign(c.Secret, b.opts.Now(), it.body))
	resp, err := b.client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return retryable, 0, fmt.Sprintf("no answer within %s", c.Timeout)
		}
		var fe *forbiddenError
		if errors.As(err, &fe) {
			return refused, 0, "post " + Target(c.URL) + ": " + fe.Error()
		}
		// Not err.Error(): it quotes the whole URL, whose path and query
		// may carry a token.
		var ue *url.Error
		if errors.As(err, &ue) {
			return retryable, 0, ue.Op + " " + Target(c.URL) + ": " + ue.Err.Error()
		}
		return retryable, 0, err.Error()
	}
	defer resp.Body.Close()
	// Read (a bounded part of) the answer, so the connection can be kept.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxResponseBody))
	code := resp.StatusCode
	switch {
	case code >= 200 && code < 300:
		return sent, 0, ""
	case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500:
		return retryable, retryAfter(resp.Header.Get("Retry-After"), b.opts.Now()), "status " + strconv.Itoa(code)
	case code >= 300 && code < 400:
		return refused, 0, "status " + strconv.Itoa(code) + ": redirects are not followed"
	}
	return refused, 0, "status " + strconv.Itoa(code)
}

// retryAfter reads a Retry-After header: seconds or an HTTP date; zero
// when absent or unreadable.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

func (h *webhook) stats() WebhookStats {
	c := h.config()
	return WebhookStats{Room: c.Room, Name: c.Name, Delivered: h.delivered.Load(), Failed: h.failed.Load(),
		Refused: h.refused.Load(), Retries: h.retries.Load(), Dropped: h.dropped.Load(), Queued: len(h.queue)}
}
