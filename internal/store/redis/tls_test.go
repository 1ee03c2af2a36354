package redis_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/store/redis"
	"github.com/usherhq/usher/internal/store/redis/redistest"
	"github.com/usherhq/usher/internal/store/storetest"
)

// TestTLSPrivateCAAndClientCertificate: a server with a private CA that
// requires client certificates takes a store given the CA, the client
// certificate and the name in the server's certificate, and refuses one
// without the client certificate, one that trusts only the system's roots
// and one that expects another name.
func TestTLSPrivateCAAndClientCertificate(t *testing.T) {
	pki := redistest.NewPKI(t)
	_, addr := redistest.StartTLSServer(t, pki)
	caPEM, err := os.ReadFile(pki.CA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	client, err := tls.LoadX509KeyPair(pki.ClientCert, pki.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	good := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots,
		Certificates: []tls.Certificate{client}, ServerName: pki.ServerName}
	s := mustOpen(t, redis.Options{Addrs: []string{addr}, TLSConfig: good})
	if res := mustAdmit(t, s, "r", op(storetest.T0, 1, 1, time.Minute)); !res.Admitted {
		t.Fatalf("admission over TLS: %+v", res)
	}

	noClient := good.Clone()
	noClient.Certificates = nil
	systemRoots := good.Clone()
	systemRoots.RootCAs = nil
	otherName := good.Clone()
	otherName.ServerName = "redis.example"
	for name, tc := range map[string]*tls.Config{
		"no client certificate": noClient,
		"system roots":          systemRoots,
		"another name":          otherName,
	} {
		t.Run(name, func(t *testing.T) {
			s, err := redis.Open(context.Background(), redis.Options{Addrs: []string{addr}, TLSConfig: tc, Timeout: time.Second})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			t.Logf("refused: %v", err)
		})
	}
}
