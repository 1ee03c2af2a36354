// Command origin is a tiny shop that only admitted visitors may enter: it
// checks usher's admission token on every request with the verify
// package, and shows the visitor what the token says.
//
// Run usher in front of it (usher proxies to this origin and adds the
// token), then:
//
//	go run ./examples/origin -jwks http://127.0.0.1:8080/__usher/jwks.json \
//		-room shop -room-url http://127.0.0.1:8080/ -listen 127.0.0.1:3000
//
// A request that reaches the shop directly, without a token, is sent to
// the room URL (browsers) or refused with 401 (everything else).
// /checkout/done ends the visitor's session (verify.Revoke).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/usherhq/usher/verify"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "origin:", err)
		os.Exit(1)
	}
}

// run parses the flags, checks that usher's keys can be fetched (a
// warning only: the verifier keeps trying), and serves until ctx ends.
func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("origin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	opts := verify.Options{}
	fs.StringVar(&opts.JWKSURL, "jwks", "http://127.0.0.1:8080/__usher/jwks.json", "usher's key set `URL`")
	fs.StringVar(&opts.Room, "room", "shop", "the room `id` visitors must have been admitted to")
	fs.StringVar(&opts.RoomURL, "room-url", "http://127.0.0.1:8080/", "where to send browsers without a valid token (`URL`); empty: 401")
	fs.StringVar(&opts.Issuer, "issuer", "", "the issuer tokens must carry; empty: not checked")
	fs.StringVar(&opts.Header, "header", verify.DefaultHeader, "the request `header` that carries the token")
	listen := fs.String("listen", "127.0.0.1:3000", "the `address` to listen on")
	if err := fs.Parse(args); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	v, err := verify.New(opts)
	if err != nil {
		return err
	}
	check, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := v.Refresh(check); err != nil {
		log.Warn("usher's keys are not available yet; requests get 503 until they are", "error", err)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: newHandler(v, log), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	log.Info("the shop is open", "addr", "http://"+ln.Addr().String(), "room", opts.Room, "jwks", opts.JWKSURL)
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// newHandler returns the shop: every page behind v's middleware.
func newHandler(v *verify.Verifier, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		c, _ := verify.ClaimsFrom(r.Context())
		log.Info("visitor inside", "sub", c.Subject, "room", c.Room, "waited", c.Waited, "kid", c.KeyID)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = page.Execute(w, c)
	})
	mux.HandleFunc("POST /checkout/done", func(w http.ResponseWriter, r *http.Request) {
		c, _ := verify.ClaimsFrom(r.Context())
		log.Info("checkout done, session revoked", "sub", c.Subject)
		verify.Revoke(w)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "Thank you for your order. Your place goes to the next visitor in line.")
	})
	return v.Middleware(mux)
}

var page = template.Must(template.New("shop").Parse(`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>The shop</title></head>
<body>
<h1>Welcome to the shop</h1>
<p>usher admitted you to the room <b>{{.Room}}</b>.</p>
<table>
<tr><th>visitor (sub)</th><td>{{.Subject}}</td></tr>
<tr><th>admitted at</th><td>{{.AdmittedAt.Format "15:04:05 MST"}}</td></tr>
<tr><th>waited</th><td>{{.Waited}}</td></tr>
<tr><th>place in line</th><td>{{.QueuePosition}}</td></tr>
<tr><th>token expires</th><td>{{.Expiry.Format "15:04:05 MST"}}</td></tr>
<tr><th>signed by key</th><td>{{.KeyID}}</td></tr>
</table>
<form method="post" action="/checkout/done"><button>Place the order</button></form>
</body>
</html>
`))
