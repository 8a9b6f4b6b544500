package kafka_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/internal/assembly"
	"github.com/redrive/redrive/internal/assembly/config"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/internal/testsupport/tlstest"
)

// TestTLSFilesReachTheDialer connects through the assembly's Config mapping to a local TLS
// listener that requires a client certificate: the handshake completes
// only when the CA file verifies the server and the client certificate is
// presented. Without the CA the client refuses the server.
func TestTLSFilesReachTheDialer(t *testing.T) {
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
			cfg, err := assembly.KafkaConfig(&config.Config{Kafka: config.Kafka{Brokers: []string{addr}, TLS: &tt.tls}}, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			cfg.ConnectTimeout = 2 * time.Second
			if b, err := kafka.New(t.Context(), cfg); err == nil {
				_ = b.Close()
				t.Fatal("New succeeded against a TLS listener that is not Kafka")
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

// TestConnectErrorsHideTheSASLPassword fails to connect with SASL and
// checks the error for the password.
func TestConnectErrorsHideTheSASLPassword(t *testing.T) {
	const secret = "sasl-S3CRET-pw"
	addr := testenv.ClosedAddr(t)
	for _, mech := range []string{config.SASLPlain, config.SASLScramSHA256, config.SASLScramSHA512} {
		cfg, err := assembly.KafkaConfig(&config.Config{Kafka: config.Kafka{
			Brokers: []string{addr},
			SASL:    &config.SASL{Mechanism: mech, Username: "redrive", Password: secret},
		}}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		cfg.ConnectTimeout = time.Second
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		b, err := kafka.New(ctx, cfg)
		cancel()
		if err == nil {
			_ = b.Close()
			t.Fatalf("%s: New succeeded against a closed port", mech)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%s: error shows the SASL password: %v", mech, err)
		}
	}
	if _, err := assembly.KafkaConfig(&config.Config{Kafka: config.Kafka{Brokers: []string{addr}, SASL: &config.SASL{Mechanism: "GSSAPI", Password: secret}}}, nil); err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("unknown mechanism: %v; want an error without the password", err)
	}
}
