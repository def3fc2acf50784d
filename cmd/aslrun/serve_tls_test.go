package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/client"
)

// TestServeTLS: serve on TCP with TLS and a tokens file: a token of the
// file is let in over TLS with its role, no token is refused.
func TestServeTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cert, key, pool := selfSigned(t, dir)
	tokens := filepath.Join(dir, "tokens")
	code, tok, errOut := invoke(t, "", "token", "create", "ops", "--role", "operator", "--tokens", tokens)
	if code != 0 {
		t.Fatalf("token create: %d %s", code, errOut)
	}
	tok = strings.TrimSpace(tok)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	startServe(t, filepath.Join(dir, "t.db"), "--listen", addr, "--tokens", tokens, "--tls-cert", cert, "--tls-key", key)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	c := client.New("https://"+addr, tok, hc)
	ctx := context.Background()
	def := []byte(`{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`)
	if _, err := c.Start(ctx, api.StartExecution{Definition: def, Name: "over-tls"}); err != nil {
		t.Fatalf("start over TLS: %v", err)
	}
	if e, err := c.Wait(ctx, "over-tls", 10*time.Millisecond); err != nil || e.Status != "SUCCEEDED" {
		t.Errorf("over-tls: %+v %v", e, err)
	}
	if _, err := client.New("https://"+addr, "", hc).Executions(ctx, "", 1); client.StatusOf(err) != http.StatusUnauthorized {
		t.Errorf("no token: %v, want 401", err)
	}
	if _, err := client.New("http://"+addr, tok, nil).Executions(ctx, "", 1); err == nil {
		t.Error("plain HTTP to the TLS port was answered")
	}
}

// selfSigned writes a certificate and key for 127.0.0.1 and returns their
// paths and a pool that trusts it.
func selfSigned(t *testing.T, dir string) (string, string, *x509.CertPool) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "aslrun test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	parsed, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(parsed)
	return cert, key, pool
}
