package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// defaultHealthURL is the admin listener's /healthz at its default address.
const defaultHealthURL = "http://127.0.0.1:9090/healthz"

// health asks a running usher whether it is up: a GET of its admin
// listener's /healthz (which needs no token) that succeeds on any 2xx. It
// is the container's health check, where there is no curl.
func (m *Main) health(ctx context.Context, args []string) error {
	fs := m.flags("health", "health [--url URL] [--timeout D]")
	target := fs.String("url", defaultHealthURL, "the URL to GET: a running usher's admin /healthz")
	timeout := fs.Duration("timeout", 2*time.Second, "how long to wait for the answer")
	if err := parse(fs, args); err != nil {
		return err
	}
	u, err := url.Parse(*target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		fmt.Fprintf(m.Stderr, "usher health: --url: must be an absolute http or https URL like %s, got %q\n", defaultHealthURL, *target)
		return errUsage
	}
	if *timeout <= 0 {
		fmt.Fprintf(m.Stderr, "usher health: --timeout: must be more than 0, got %v\n", *timeout)
		return errUsage
	}
	status, err := getHealth(ctx, *target, *timeout)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	fmt.Fprintf(m.Stdout, "%s: %s\n", *target, status)
	return nil
}

// getHealth GETs target within timeout and returns its status line, or why
// it is not healthy: no answer, or a status outside 2xx (with the start of
// the body). Redirects are not followed, and no proxy is used.
func getHealth(ctx context.Context, target string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return "", err
	}
	client := &http.Client{
		Transport: &http.Transport{DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return "", fmt.Errorf("%s: no answer within %v", target, timeout)
		}
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := fmt.Sprintf("%s: %s", target, resp.Status)
		if b := strings.Join(strings.Fields(string(body)), " "); b != "" {
			msg += ": " + b
		}
		return "", errors.New(msg)
	}
	return resp.Status, nil
}
