package rabbit

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker/rabbit/internal/framefilter"
)

// frameSize is the frame size redrive's connections propose (amqp091-go's
// default, set here so that the frame filter knows it).
const frameSize = 131072

// transport returns the URL to hand amqp091-go and the dial function of
// url's connections: TCP, TLS for amqps:// URLs, then the frame filter on
// the plaintext (framefilter: a delivery whose properties the library
// cannot decode reaches the consumer marked, instead of closing the
// connection and coming back to the next one, forever).
//
// For amqps:// the TLS handshake happens here, not in the library, so
// that the filter sees frames, not ciphertext: the URL handed on is
// amqp:// with the same port, and the TLS settings are the library's
// (DialerConfig.TLS, else the URL's cacertfile, certfile, keyfile and
// server_name_indication over the system roots; the server name defaults
// to the host dialed).
func (d *Dialer) transport(raw, role string) (string, func(network, addr string) (net.Conn, error), error) {
	tcp := amqp.DefaultDial(d.cfg.Timeout)
	refused := func(why string) {
		d.cfg.Logger.Warn("rabbit: the AMQP client cannot decode a delivery's properties; it is delivered marked "+
			framefilter.HeaderUndecodable+" and moved aside", "role", role, "why", why)
	}
	uri, err := amqp.ParseURI(raw)
	if err != nil {
		return "", nil, err
	}
	if uri.Scheme != "amqps" {
		return raw, func(network, addr string) (net.Conn, error) {
			c, err := tcp(network, addr)
			if err != nil {
				return nil, err
			}
			return framefilter.Wrap(c, frameSize, refused), nil
		}, nil
	}
	tc := d.cfg.TLS.Clone()
	if tc == nil {
		if tc, err = tlsFromURI(uri); err != nil {
			return "", nil, err
		}
	}
	if tc.ServerName == "" {
		tc.ServerName = uri.Host
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", nil, err
	}
	u.Scheme, u.Host = "amqp", net.JoinHostPort(uri.Host, strconv.Itoa(uri.Port))
	return u.String(), func(network, addr string) (net.Conn, error) {
		c, err := tcp(network, addr)
		if err != nil {
			return nil, err
		}
		s := tls.Client(c, tc) // the handshake runs within tcp's deadline
		if err := s.Handshake(); err != nil {
			_ = c.Close()
			return nil, err
		}
		return framefilter.Wrap(s, frameSize, refused), nil
	}, nil
}

// tlsFromURI returns the TLS settings of an amqps:// URL without
// DialerConfig.TLS, as amqp091-go derives them: the CA file of cacertfile
// (else the system roots), the client certificate of certfile and keyfile,
// the server name of server_name_indication.
func tlsFromURI(uri amqp.URI) (*tls.Config, error) {
	tc := &tls.Config{ServerName: uri.ServerName, MinVersion: tls.VersionTLS12}
	if uri.CACertFile != "" {
		pem, err := os.ReadFile(uri.CACertFile)
		if err != nil {
			return nil, fmt.Errorf("rabbit: read CA certificate: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		tc.RootCAs.AppendCertsFromPEM(pem)
	} else if pool, err := x509.SystemCertPool(); err != nil {
		return nil, fmt.Errorf("rabbit: load system certificates: %w", err)
	} else {
		tc.RootCAs = pool
	}
	if uri.CertFile != "" && uri.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(uri.CertFile, uri.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("rabbit: load client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}
