package rabbit_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/backend"
	"github.com/redrive/redrive/internal/config"
	"github.com/redrive/redrive/internal/tlstest"
)

// TestTLSFilesReachTheDialer connects through backend.ConfigOf to a local TLS
// listener that requires a client certificate: the handshake completes
// only when the CA file verifies the server and the client certificate is
// presented. Without the CA the client refuses the server. The failing
// connect's error never shows the URL's password.
func TestTLSFilesReachTheDialer(t *testing.T) {
	const secret = "amqp-S3CRET-pw"
	f := tlstest.Generate(t)
	tests := []struct {
		name   string
		tls    config.TLS
		wantCN string // "" = the handshake must fail
	}{
		{"ca and client certificate", config.TLS{CAFile: f.CA, CertFile: f.ClientCert, KeyFile: f.ClientKey}, "redrive-client"},
		{"server name checked against the certificate", config.TLS{CAFile: f.CA, CertFile: f.ClientCert, KeyFile: f.ClientKey, ServerName: "localhost"}, "redrive-client"},
		{"system roots do not know the CA", config.TLS{CertFile: f.ClientCert, KeyFile: f.ClientKey}, ""},
		{"wrong server name", config.TLS{CAFile: f.CA, CertFile: f.ClientCert, KeyFile: f.ClientKey, ServerName: "elsewhere"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr, handshakes := tlstest.Listen(t, f)
			cfg, err := backend.ConfigOf[rabbit.Config](&config.Config{RabbitMQ: config.RabbitMQ{URL: "amqps://redrive:" + secret + "@" + addr + "/", TLS: &tt.tls}}, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			cfg.DialTimeout = 2 * time.Second
			b, err := rabbit.New(t.Context(), cfg)
			if err == nil {
				_ = b.Close()
				t.Fatal("New succeeded against a TLS listener that is not RabbitMQ")
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("connect error shows the password: %v", err)
			}
			select {
			case h := <-handshakes:
				if tt.wantCN != "" && (h.Err != nil || h.ClientCN != tt.wantCN) {
					t.Errorf("handshake: client %q, %v; want client %q", h.ClientCN, h.Err, tt.wantCN)
				}
				if tt.wantCN == "" && h.Err == nil {
					t.Errorf("handshake completed (client %q); want the client to refuse the server", h.ClientCN)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("no TLS handshake reached the listener")
			}
		})
	}
}
