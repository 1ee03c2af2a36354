package bench

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// LoadConfig is one closed-loop load: Workers each send a request, read
// the whole answer, and send the next, for Duration.
type LoadConfig struct {
	// URL is requested by every worker.
	URL string
	// Workers is the number of requests in flight (zero: 32).
	Workers int
	// Duration is how long the load runs (zero: 3 s).
	Duration time.Duration
	// Transport carries the requests; share one between loads so that
	// connection set-up does not count (nil: a new one per load).
	Transport http.RoundTripper
	// Cookies, when true, makes each worker one visitor: it keeps the
	// cookies the first answer (sent before the clock starts) and any later
	// one sets, and sends them back, as a browser would (an admitted
	// visitor, or a waiter checking in).
	Cookies bool
	// Expect, when not nil, says whether an answer is the kind the load
	// measures (an admitted visitor must reach the origin); other answers
	// count as errors.
	Expect func(*http.Response) bool
}

// LoadResult is what a load measured.
type LoadResult struct {
	Requests int     `json:"requests"`
	Errors   int     `json:"errors"`
	RPS      float64 `json:"rps"`
	P50ms    float64 `json:"p50_ms"`
	P99ms    float64 `json:"p99_ms"`
}

// Load runs cfg and returns requests per second and latency percentiles.
func Load(ctx context.Context, cfg LoadConfig) (LoadResult, error) {
	workers := orDefault(cfg.Workers, 32)
	dur := orDefault(cfg.Duration, 3*time.Second)
	tr := cfg.Transport
	if tr == nil {
		tr = newTransport(workers)
	}
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	jars := make([]*cookies, workers)
	for i := range jars {
		if cfg.Cookies {
			jars[i] = &cookies{}
			if _, err := loadOnce(ctx, client, cfg.URL, jars[i], nil); err != nil {
				return LoadResult{}, err
			}
		}
	}
	var (
		mu   sync.Mutex
		lats []time.Duration
		res  LoadResult
		wg   sync.WaitGroup
	)
	start := time.Now()
	end := start.Add(dur)
	for _, jar := range jars {
		wg.Go(func() {
			var mine []time.Duration
			errs := 0
			for time.Now().Before(end) && ctx.Err() == nil {
				t0 := time.Now()
				ok, err := loadOnce(ctx, client, cfg.URL, jar, cfg.Expect)
				if err != nil || !ok {
					errs++
					continue
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lats = append(lats, mine...)
			res.Errors += errs
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if len(lats) == 0 {
		return res, errors.New("load: no request succeeded")
	}
	slices.Sort(lats)
	res.Requests = len(lats)
	res.RPS = float64(len(lats)) / elapsed.Seconds()
	res.P50ms = float64(lats[len(lats)/2]) / float64(time.Millisecond)
	res.P99ms = float64(lats[len(lats)*99/100]) / float64(time.Millisecond)
	return res, ctx.Err()
}

// cookies is one visitor's cookies: name=value pairs, kept in order.
type cookies struct{ header string }

// update takes the cookies an answer sets.
func (c *cookies) update(resp *http.Response) {
	if len(resp.Header["Set-Cookie"]) == 0 {
		return
	}
	pairs := map[string]string{}
	var order []string
	for _, kv := range strings.Split(c.header, "; ") {
		if name, v, ok := strings.Cut(kv, "="); ok {
			pairs[name] = v
			order = append(order, name)
		}
	}
	for _, sc := range resp.Cookies() {
		if _, ok := pairs[sc.Name]; !ok {
			order = append(order, sc.Name)
		}
		pairs[sc.Name] = sc.Value
	}
	var b strings.Builder
	for i, name := range order {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(name + "=" + pairs[name])
	}
	c.header = b.String()
}

// loadOnce sends one GET (with the visitor's cookies, if any) and reads the
// whole answer.
func loadOnce(ctx context.Context, c *http.Client, url string, jar *cookies, expect func(*http.Response) bool) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err
	}
	if jar != nil && jar.header != "" {
		req.Header.Set("Cookie", jar.header)
	}
	resp, err := c.Do(req)
	if err != nil {
		return false, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return false, err
	}
	if jar != nil {
		jar.update(resp)
	}
	return expect == nil || expect(resp), nil
}

// StartLine puts n visitors in the line of the room at url, ahead of any
// load started after the next whole second (a later arrival second), and
// keeps them live: each checks in every `every` (with the client's
// cookies and headers) until stop is called, which returns when they have
// stopped. Their answers are not measured.
func StartLine(ctx context.Context, rt http.RoundTripper, url string, n int, every time.Duration) (stop func(), err error) {
	client := &http.Client{Transport: rt, Timeout: 30 * time.Second}
	jars := make([]*cookies, n)
	for i := range jars {
		jars[i] = &cookies{}
		if _, err := loadOnce(ctx, client, url, jars[i], nil); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, jar := range jars {
		wg.Go(func() {
			t := time.NewTicker(every)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					_, _ = loadOnce(ctx, client, url, jar, nil)
				}
			}
		})
	}
	// The load's visitors arrive in a later second than the line's.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 50*time.Millisecond)))
	return func() { cancel(); wg.Wait() }, nil
}
