package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
)

// ErrTLS is wrapped by TLS.Config errors.
var ErrTLS = errors.New("config: tls")

// Config builds the client tls.Config t describes: the CA bundle as root
// CAs, the client certificate, the server name. nil t gives nil.
func (t *TLS) Config() (*tls.Config, error) {
	if t == nil {
		return nil, nil
	}
	c := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         t.ServerName,
		InsecureSkipVerify: t.InsecureSkipVerify, //nolint:gosec // explicit configuration, documented for tests
	}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%w: read ca_file: %w", ErrTLS, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: ca_file %s: no PEM certificate", ErrTLS, t.CAFile)
		}
		c.RootCAs = pool
	}
	if t.CertFile != "" || t.KeyFile != "" {
		if t.CertFile == "" || t.KeyFile == "" {
			return nil, fmt.Errorf("%w: cert_file and key_file go together", ErrTLS)
		}
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: load cert_file/key_file: %w", ErrTLS, err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// validate reports the problems of t under path (e.g. "kafka.tls").
func (t *TLS) validate(p *problems, path string) {
	if t == nil {
		return
	}
	before := len(p.errs)
	for _, f := range []struct{ key, file string }{{"ca_file", t.CAFile}, {"cert_file", t.CertFile}, {"key_file", t.KeyFile}} {
		if f.file == "" {
			continue
		}
		if _, err := os.ReadFile(f.file); err != nil {
			p.add(path+"."+f.key, fmt.Sprintf("cannot be read: %v", err))
		}
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		p.add(path, "cert_file and key_file go together")
	}
	if len(p.errs) > before {
		return // the files themselves are the problem
	}
	if _, err := t.Config(); err != nil {
		p.add(path, err.Error())
	}
}

// saslMechanisms are the known kafka.sasl.mechanism values.
var saslMechanisms = []string{SASLPlain, SASLScramSHA256, SASLScramSHA512}

// validate reports the problems of s (kafka.sasl).
func (s *SASL) validate(p *problems) {
	if s == nil {
		return
	}
	if !slices.Contains(saslMechanisms, s.Mechanism) {
		p.add("kafka.sasl.mechanism", fmt.Sprintf("%q is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", s.Mechanism))
	}
	if s.Username == "" {
		p.add("kafka.sasl.username", "required with sasl")
	}
	if s.Password == "" {
		p.add("kafka.sasl.password", "required with sasl")
	}
}
