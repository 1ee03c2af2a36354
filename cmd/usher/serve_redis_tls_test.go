package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/usherhq/usher/internal/config"
	"github.com/usherhq/usher/internal/store/redis/redistest"
)

// TestOpenStoreRedisTLS: store.redis.tls with a private CA, a client
// certificate and a server name reaches a redis-server that requires
// them, through config.Load and openStore as serve uses them; the same
// config without the client certificate does not.
func TestOpenStoreRedisTLS(t *testing.T) {
	pki := redistest.NewPKI(t)
	_, addr := redistest.StartTLSServer(t, pki)
	dir := t.TempDir()
	load := func(client string) *config.Config {
		t.Helper()
		body := fmt.Sprintf(`listen: 127.0.0.1:0
store:
  redis:
    addrs: [%s]
    tls:
      ca_file: %s
      server_name: %s
%s
rooms:
  - id: sale
    origin: http://127.0.0.1:1
    total_active_users: 10
    new_users_per_minute: 10
`, addr, pki.CA, pki.ServerName, client)
		path := filepath.Join(dir, "usher.yaml")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	ctx := context.Background()
	cfg := load(fmt.Sprintf("      cert_file: %s\n      key_file: %s", pki.ClientCert, pki.ClientKey))
	s, _, err := openStore(ctx, cfg, slog.Default())
	if err != nil {
		t.Fatalf("openStore with the CA and the client certificate: %v", err)
	}
	defer s.Close()
	if _, err := s.LoadKeys(ctx); err != nil {
		t.Fatalf("a call over TLS: %v", err)
	}
	if s, _, err := openStore(ctx, load(""), slog.Default()); err == nil {
		s.Close()
		t.Fatal("openStore without the client certificate succeeded against a server that requires one")
	}
}
