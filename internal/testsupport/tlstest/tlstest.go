// Package tlstest generates a throwaway CA with a server and a client
// certificate for 127.0.0.1, written as PEM files, and runs a TLS listener
// that reports the handshakes it completes, or one that forwards to a
// plain server (Terminate). It is meant for tests only.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Files are the PEM files of a generated CA.
type Files struct {
	CA                    string // CA certificate
	ServerCert, ServerKey string // for 127.0.0.1 and "localhost"
	ClientCert, ClientKey string // client authentication, CN "redrive-client"
}

// Generate writes a new CA and its server and client certificates into a
// temporary directory of t.
func Generate(t testing.TB) Files {
	t.Helper()
	dir := t.TempDir()
	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "redrive test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatalf("tlstest: CA: %v", err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	f := Files{CA: write(t, dir, "ca.pem", "CERTIFICATE", caDER)}
	f.ServerCert, f.ServerKey = leaf(t, dir, "server", ca, caKey, &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "localhost"},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	f.ClientCert, f.ClientKey = leaf(t, dir, "client", ca, caKey, &x509.Certificate{
		SerialNumber: big.NewInt(3),
		Subject:      pkix.Name{CommonName: "redrive-client"},
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	return f
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("tlstest: key: %v", err)
	}
	return k
}

func leaf(t testing.TB, dir, name string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, tmpl *x509.Certificate) (cert, key string) {
	t.Helper()
	k := newKey(t)
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
	if err != nil {
		t.Fatalf("tlstest: %s certificate: %v", name, err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatalf("tlstest: %s key: %v", name, err)
	}
	return write(t, dir, name+".pem", "CERTIFICATE", der), write(t, dir, name+"-key.pem", "PRIVATE KEY", kder)
}

func write(t testing.TB, dir, name, typ string, der []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatalf("tlstest: %v", err)
	}
	return p
}

// Handshake is one handshake a Listener saw: the client certificate's
// common name when it completed, or the error.
type Handshake struct {
	ClientCN string
	Err      error
}

// listen starts a TLS listener on 127.0.0.1 with f's server certificate
// that requires a client certificate signed by f's CA.
func listen(t testing.TB, f Files) net.Listener {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(f.ServerCert, f.ServerKey)
	if err != nil {
		t.Fatalf("tlstest: server certificate: %v", err)
	}
	pemCA, err := os.ReadFile(f.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemCA)
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		MinVersion:   tls.VersionTLS12,
	})
	if err != nil {
		t.Fatalf("tlstest: listen: %v", err)
	}
	return l
}

// Listen starts a TLS listener on 127.0.0.1 with f's server certificate
// that requires a client certificate signed by f's CA. Every handshake is
// sent on the returned channel; the connection is then closed. It stops
// when t ends.
func Listen(t testing.TB, f Files) (addr string, handshakes <-chan Handshake) {
	t.Helper()
	l := listen(t, f)
	t.Cleanup(func() { _ = l.Close() })
	ch := make(chan Handshake, 64)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				tc := c.(*tls.Conn)
				_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
				h := Handshake{Err: tc.Handshake()}
				if h.Err == nil {
					if pc := tc.ConnectionState().PeerCertificates; len(pc) > 0 {
						h.ClientCN = pc[0].Subject.CommonName
					}
				}
				select {
				case ch <- h:
				default:
				}
			}()
		}
	}()
	return l.Addr().String(), ch
}

// Terminate starts a TLS listener on 127.0.0.1 with f's server
// certificate, requiring a client certificate signed by f's CA, that
// forwards each connection's plaintext to target (e.g. RabbitMQ's AMQP
// port): a TLS endpoint of a plain server, for tests of TLS clients. It
// stops when t ends.
func Terminate(t testing.TB, f Files, target string) (addr string) {
	t.Helper()
	l := listen(t, f)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		conns  []net.Conn
		closed bool
	)
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		closed = true
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			mu.Lock()
			if closed {
				mu.Unlock()
				_, _ = c.Close(), up.Close()
				return
			}
			conns = append(conns, c, up)
			mu.Unlock()
			wg.Go(func() { _, _ = io.Copy(up, c); _ = up.Close() })
			wg.Go(func() { _, _ = io.Copy(c, up); _ = c.Close() })
		}
	})
	return l.Addr().String()
}
