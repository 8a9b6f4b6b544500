package relay_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/internal/testsupport/tlstest"
	"github.com/redrive/redrive/relay"
)

// Redirects: followed only when configured, only 307/308 (the method and
// body kept), never from https to http.
func TestRedirects(t *testing.T) {
	t.Parallel()
	target := newServer(t, status(200))
	to := func(code int, url string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, url, code) }
	}
	for _, tc := range []struct {
		name      string
		code, max int
		followed  bool
	}{
		{"307 with max_redirects 1", 307, 1, true},
		{"308 with max_redirects 1", 308, 1, true},
		{"307 with max_redirects 0", 307, 0, false},
		{"301 never", 301, 3, false},
		{"303 never", 303, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newServer(t, to(tc.code, target.URL+"/moved"))
			ep := endpoint(t, relay.EndpointConfig{URL: src.URL, MaxRedirects: tc.max, BearerToken: "t0ken"})
			before := len(target.received())
			err := ep.Handle(t.Context(), delivery("r-"+tc.name, []byte("body")))
			got := target.received()[before:]
			if tc.followed {
				if err != nil || len(got) != 1 || string(got[0].Body) != "body" {
					t.Fatalf("Handle = %v, target got %d POSTs, want the POST with its body", err, len(got))
				}
				return
			}
			if err == nil || len(got) != 0 || broker.ErrorClass(err) != fmt.Sprintf("http.%d", tc.code) {
				t.Fatalf("Handle = %v (target got %d), want a retried http.%d", err, len(got), tc.code)
			}
		})
	}
	t.Run("https to http", func(t *testing.T) {
		files := tlstest.Generate(t)
		src := tlsServer(t, files, false, to(307, target.URL))
		ep := endpoint(t, relay.EndpointConfig{URL: src.URL, MaxRedirects: 3, TLS: clientTLS(t, files, false)})
		before := len(target.received())
		if err := ep.Handle(t.Context(), delivery("m", nil)); err == nil || len(target.received()) != before {
			t.Fatalf("Handle = %v, want the downgrade refused", err)
		}
	})
}

func tlsServer(t *testing.T, files tlstest.Files, mutual bool, h http.HandlerFunc) *server {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(files.ServerCert, files.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	s := &server{}
	s.Server = httptest.NewUnstartedServer(s.handler(t, h))
	s.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the point
	if mutual {
		s.TLS.ClientAuth, s.TLS.ClientCAs = tls.RequireAndVerifyClientCert, pool(t, files)
	}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

func pool(t *testing.T, files tlstest.Files) *x509.CertPool {
	pem, err := os.ReadFile(files.CA)
	if err != nil {
		t.Fatal(err)
	}
	p := x509.NewCertPool()
	p.AppendCertsFromPEM(pem)
	return p
}

func clientTLS(t *testing.T, files tlstest.Files, withCert bool) *tls.Config {
	c := &tls.Config{RootCAs: pool(t, files), MinVersion: tls.VersionTLS12}
	if withCert {
		cert, err := tls.LoadX509KeyPair(files.ClientCert, files.ClientKey)
		if err != nil {
			t.Fatal(err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c
}

// TLS is verified (a CA of the test's own), mutual TLS presents the
// client certificate, and the bearer token is sent.
func TestTLSAndAuth(t *testing.T) {
	t.Parallel()
	files := tlstest.Generate(t)
	srv := tlsServer(t, files, true, status(200))
	for _, tc := range []struct {
		name string
		tls  *tls.Config
		ok   bool
	}{
		{"verified, with the client certificate", clientTLS(t, files, true), true},
		{"the system roots do not know the test CA", nil, false},
		{"no client certificate", clientTLS(t, files, false), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep := endpoint(t, relay.EndpointConfig{URL: srv.URL, TLS: tc.tls, BearerToken: "s3cret-t0ken"})
			err := ep.Handle(t.Context(), delivery("m", nil))
			if tc.ok != (err == nil) {
				t.Fatalf("Handle = %v, want ok %v", err, tc.ok)
			}
			if err != nil && broker.ErrorClass(err) != "http.unreachable" {
				t.Errorf("class %q, want http.unreachable", broker.ErrorClass(err))
			}
		})
	}
	if _, err := relay.NewEndpoint(relay.EndpointConfig{Worker: "w", Topic: "t", URL: srv.URL, TLS: &tls.Config{InsecureSkipVerify: true}}); err == nil {
		t.Error("NewEndpoint accepted InsecureSkipVerify")
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.auth) != 1 || srv.auth[0] != "Bearer s3cret-t0ken" {
		t.Errorf("Authorization headers seen: %q, want one bearer token", srv.auth)
	}
}
