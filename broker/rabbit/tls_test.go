package rabbit_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/assembly"
	"github.com/redrive/redrive/internal/assembly/config"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/internal/testsupport/tlstest"
)

// TestTLSFilesReachTheDialer connects through the assembly's Config mapping to a local TLS
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
			cfg, err := assembly.RabbitConfig(&config.Config{RabbitMQ: config.RabbitMQ{URL: "amqps://redrive:" + secret + "@" + addr + "/", TLS: &tt.tls}}, slog.New(slog.DiscardHandler))
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

// TestUndecodableOverTLS: the frame filter reads the plaintext of amqps://
// connections. A worker and a keeper connected through a TLS endpoint
// (client certificate required) of the test's RabbitMQ, with the TLS
// files in the configuration and in the URL's query (cacertfile,
// certfile, keyfile): a 33-deep header table is dead-lettered and kept as
// undecodable, the plain messages behind it are handled. Counted: 5
// handled, 1 kept.
func TestUndecodableOverTLS(t *testing.T) {
	f := tlstest.Generate(t)
	for _, inURL := range []bool{false, true} {
		t.Run(fmt.Sprint("files in the URL: ", inURL), func(t *testing.T) {
			u, err := url.Parse(testenv.RabbitMQ.URL())
			if err != nil {
				t.Fatal(err)
			}
			u.Scheme, u.Host = "amqps", tlstest.Terminate(t, f, u.Host)
			files := &config.TLS{CAFile: f.CA, CertFile: f.ClientCert, KeyFile: f.ClientKey}
			if inURL {
				u.RawQuery = url.Values{"cacertfile": {f.CA}, "certfile": {f.ClientCert}, "keyfile": {f.ClientKey}}.Encode()
				files = nil
			}
			tc, err := assembly.RabbitConfig(&config.Config{RabbitMQ: config.RabbitMQ{URL: u.String(), TLS: files}}, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			s := sub(testenv.Name(t))
			b := newBroker(t, func(c *rabbit.Config) { c.URL, c.TLS = u.String(), tc.TLS }, s)
			if err := b.Declare(t.Context(), s); err != nil {
				t.Fatal(err)
			}
			var handled testenv.Recorder[string]
			stop := testenv.Consume(t, b, s, func(_ context.Context, d *broker.Delivery) error {
				handled.Add(d.ID)
				return nil
			})
			defer stop()
			msgs := []amqp.Publishing{{Headers: deepTable(33), MessageId: "deep-33", Body: []byte("deep")}}
			for i := range 5 {
				msgs = append(msgs, amqp.Publishing{MessageId: fmt.Sprint("plain-", i), Body: []byte("ok")})
			}
			publishRaw(t, channel(t), b.Names().Topics(), s.Topic, msgs...)
			handled.WaitUntil(t, 30*time.Second, "5 plain messages handled over TLS", func(ids []string) bool { return len(ids) >= 5 })
			e := keep(t, b, rabbit.DLQ(rabbit.Queue(s.Topic, s.Group)), 1)["deep-33"]
			if e.Reason != string(driver.ReasonUndecodable) {
				t.Errorf("entry reason %q, want undecodable", e.Reason)
			}
			if got := handled.Snapshot(); len(got) != 5 {
				t.Errorf("handled %v, want the 5 plain messages once", got)
			}
		})
	}
}
