package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// PKI is a throwaway certificate authority and the certificates it
// signed, as PEM files: one for a server named ServerName, one for a
// client.
type PKI struct {
	// CA is the authority's certificate.
	CA string
	// ServerCert and ServerKey are the server's certificate (for the DNS
	// name ServerName) and key.
	ServerCert, ServerKey string
	// ClientCert and ClientKey are a client certificate and its key.
	ClientCert, ClientKey string
	// ServerName is the name in the server's certificate.
	ServerName string
}

// NewPKI makes a CA valid for an hour and a server and a client
// certificate signed by it, and writes them to the test's temp directory.
func NewPKI(t testing.TB) PKI {
	t.Helper()
	dir := t.TempDir()
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "usher test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, der []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	issue := func(serial int64, name string, usage x509.ExtKeyUsage) (cert, key string) {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return write(name+".pem", "CERTIFICATE", der), write(name+".key", "EC PRIVATE KEY", kder)
	}
	p := PKI{CA: write("ca.pem", "CERTIFICATE", caDER), ServerName: "redis.test"}
	p.ServerCert, p.ServerKey = issue(2, p.ServerName, x509.ExtKeyUsageServerAuth)
	p.ClientCert, p.ClientKey = issue(3, "usher", x509.ExtKeyUsageClientAuth)
	return p
}

// StartTLSServer starts a redis-server that also listens with TLS, with
// pki's server certificate and requiring a client certificate pki's CA
// signed, on a second free loopback port returned as tlsAddr; Addr stays
// plain (the helper checks there that the server answers).
func StartTLSServer(t testing.TB, pki PKI) (s *Server, tlsAddr string) {
	t.Helper()
	var port int
	s = startServer(t, func(int) []string {
		port = freePort(t)
		return []string{"--tls-port", strconv.Itoa(port),
			"--tls-cert-file", pki.ServerCert, "--tls-key-file", pki.ServerKey,
			"--tls-ca-cert-file", pki.CA, "--tls-auth-clients", "yes"}
	})
	return s, "127.0.0.1:" + strconv.Itoa(port)
}
