package selfbench

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestWaiterConn: the generator's own client reads what net/http's server
// writes (Content-Length, chunks, the ticket's Set-Cookie among others,
// Connection: close), sends the cookie, and keeps its connection alive.
func TestWaiterConn(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") != "application/json" {
			t.Errorf("Accept %q", r.Header.Get("Accept"))
		}
		c, _ := r.Cookie("__usher_wr_t")
		got := ""
		if c != nil {
			got = c.Value
		}
		http.SetCookie(w, &http.Cookie{Name: "other", Value: "x"})
		switch r.URL.Path {
		case "/chunked":
			w.Header().Set("Set-Cookie", "__usher_wr_t=v2; Path=/; HttpOnly")
			w.(http.Flusher).Flush() // no Content-Length: chunks
			fmt.Fprintf(w, `{"got":%q,`, got)
			w.(http.Flusher).Flush()
			fmt.Fprint(w, strings.Repeat(" ", 5000)+`"end":1}`)
		case "/close":
			w.Header().Set("Connection", "close")
			w.WriteHeader(http.StatusTeapot)
			fmt.Fprint(w, "bye")
		default:
			http.SetCookie(w, &http.Cookie{Name: "__usher_wr_t", Value: "v1", Path: "/"})
			fmt.Fprintf(w, `{"got":%q}`, got)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	req := func(path string) []byte {
		return fmt.Appendf(nil, "GET %s HTTP/1.1\r\nHost: %s\r\nAccept: application/json\r\n", path, host)
	}
	w := &waiterConn{addr: host}
	defer w.close()
	for i, cookie := range []string{"", "abc", "abc"} {
		status, set, body, err := w.get(req("/"), "__usher_wr_t", []byte(cookie))
		if err != nil || status != 200 || string(set) != "v1" || string(body) != fmt.Sprintf(`{"got":%q}`, cookie) {
			t.Fatalf("request %d: %d %q %q %v", i, status, set, body, err)
		}
	}
	status, set, body, err := w.get(req("/chunked"), "__usher_wr_t", []byte("abc"))
	if err != nil || status != 200 || string(set) != "v2" || !strings.HasPrefix(string(body), `{"got":"abc",`) ||
		!strings.HasSuffix(string(body), `"end":1}`) || len(body) != len(`{"got":"abc",`)+5000+len(`"end":1}`) {
		t.Fatalf("chunked: %d %q %q %v", status, set, body, err)
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections for 4 requests, want 1 (kept alive)", n)
	}
	status, set, body, err = w.get(req("/close"), "__usher_wr_t", nil)
	if err != nil || status != http.StatusTeapot || set != nil || string(body) != "bye" || w.c != nil {
		t.Fatalf("close: %d %q %q %v, conn %v", status, set, body, err, w.c)
	}
	if _, _, _, err := w.get(req("/"), "__usher_wr_t", nil); err != nil {
		t.Fatal(err)
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2 (a new one after Connection: close)", n)
	}
}

// TestWaiterConnBadAnswers: an answer that is not HTTP, or whose length
// or chunks are wrong, is an error naming what was wrong, and the
// connection is dropped.
func TestWaiterConnBadAnswers(t *testing.T) {
	for _, tc := range []struct{ name, answer, want string }{
		{"not http", "SSH-2.0-x\r\n\r\n", "bad status line"},
		{"bad length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "bad Content-Length"},
		{"huge length", "HTTP/1.1 200 OK\r\nContent-Length: 99999999\r\n\r\n", "bad Content-Length"},
		{"bad chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "bad chunk size"},
		{"gzip", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", "transfer encoding"},
		{"header", "HTTP/1.1 200 OK\r\nnocolon\r\n\r\n", "bad header line"},
		{"long line", "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", 10000) + "\r\n\r\n", "too long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				buf := make([]byte, 4096)
				_, _ = c.Read(buf)
				_, _ = c.Write([]byte(tc.answer))
			}()
			w := &waiterConn{addr: ln.Addr().String()}
			_, _, _, err = w.get([]byte("GET / HTTP/1.1\r\nHost: x\r\n"), "n", nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if w.c != nil {
				t.Fatal("the connection was kept after a bad answer")
			}
		})
	}
}

// TestServerHold reads usher's hold from Server-Timing, alone or among
// other metrics, and nothing from anything else.
func TestServerHold(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"usher-hold;dur=412.5", 412500 * time.Microsecond},
		{"db;dur=3, usher-hold;dur=800.0;desc=\"held\"", 800 * time.Millisecond},
		{"usher-hold ; dur=10", 10 * time.Millisecond},
		{"cache;dur=5", 0},
		{"usher-hold", 0},
		{"usher-hold;dur=-4", 0},
		{"usher-hold;dur=NaN", 0},
		{"usher-hold;dur=1e9", 0},
		{"usher-holding;dur=5", 0},
		{"", 0},
	} {
		if got := serverHold([]byte(tc.in)); got != tc.want {
			t.Errorf("serverHold(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
