package config

import (
	"fmt"
	"mime"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/redrive/redrive/internal/redact"
)

// The HTTP endpoints of redrive relay: a worker's `endpoint` section and
// the `relay` section.

// Defaults of an endpoint and of the relay section.
const (
	DefaultRelayListen         = "127.0.0.1:9478"
	DefaultEndpointTimeout     = 30 * time.Second
	DefaultEndpointContentType = "application/octet-stream"
	DefaultEndpointHeaderBytes = 16 << 10
	// Bounds of endpoint.max_header_bytes and max_redirects.
	MinEndpointHeaderBytes = 1 << 10
	MaxEndpointHeaderBytes = 1 << 20
	MaxEndpointRedirects   = 10
	// MaxBearerTokenLen bounds endpoint.bearer_token.
	MaxBearerTokenLen = 4096
)

// DefaultPermanentStatuses are the answers that dead-letter a message at
// once unless endpoint.permanent_statuses says otherwise.
var DefaultPermanentStatuses = []int{400, 404, 410, 422}

// Relay configures redrive relay.
type Relay struct {
	// Listen is the host:port the relay serves GET /metrics (Prometheus:
	// its workers' handler metrics and its endpoints' requests) and
	// /healthz on; `redrive relay --listen` overrides it.
	Listen string `yaml:"listen"`
}

// Endpoint is the HTTP endpoint that redrive relay POSTs a worker's
// messages to, each as a CloudEvent in HTTP binary mode (the payload as
// the body, byte for byte); the answer decides, as a Go handler's error
// would (docs/relay.md). The worker's concurrency bounds the POSTs in
// flight from each relay process.
type Endpoint struct {
	// URL is where every message of the worker is POSTed: http:// or
	// https://, with a host and no user information (give bearer_token
	// instead). Required. Nothing a message carries changes it.
	URL string `yaml:"url"`
	// Timeout bounds one POST, from the request to the end of the answer
	// read; a POST that runs longer is retried by the worker's schedule
	// (transient, counted by the kill switch). > 0.
	Timeout Duration `yaml:"timeout"`
	// PermanentStatuses are the HTTP statuses that dead-letter the message
	// at once (reason permanent): each from 400 to 599, not 429. Unset or
	// empty: 400, 404, 410 and 422.
	PermanentStatuses []int `yaml:"permanent_statuses"`
	// MaxRedirects is how many redirects a POST follows: only 307 and 308
	// (which keep the method and the body), never from https to http.
	// 0 (the default) follows none: a 3xx answer is a failure, retried.
	// 0 to 10.
	MaxRedirects int `yaml:"max_redirects"`
	// ContentType is the Content-Type of every POST (the CloudEvents
	// datacontenttype): a media type.
	ContentType string `yaml:"content_type"`
	// MaxHeaderBytes bounds the HTTP headers a message becomes (its
	// headers, key and story; docs/relay.md): a message that needs more
	// is dead-lettered at once, kept whole, instead of being refused by
	// the endpoint's server on every retry. Bytes, 1024 to 1048576.
	MaxHeaderBytes int `yaml:"max_header_bytes"`
	// BearerToken is sent, when set, as "Authorization: Bearer <token>",
	// e.g. "${PAYOUT_ENDPOINT_TOKEN}": printable ASCII without spaces, at
	// most 4096 characters. Secret: masked by Redacted.
	BearerToken string `yaml:"bearer_token"`
	// TLS configures https:// endpoints: the CA that signed the server's
	// certificate (absent: the system roots) and a client certificate for
	// mutual TLS. The server's certificate is always verified.
	TLS *EndpointTLS `yaml:"tls"`
}

// EndpointTLS configures TLS to an endpoint. Files are PEM; every file
// named must be readable and load.
type EndpointTLS struct {
	CAFile     string `yaml:"ca_file"`     // CA bundle to verify the endpoint's certificate; empty = the system roots
	CertFile   string `yaml:"cert_file"`   // client certificate (mutual TLS); with key_file, and matching it
	KeyFile    string `yaml:"key_file"`    // its private key; with cert_file
	ServerName string `yaml:"server_name"` // name to verify; empty = the URL's host
}

// ClientTLS returns t as the TLS client configuration of the shared TLS
// type (verification on), for its Config method.
func (t *EndpointTLS) ClientTLS() *TLS {
	if t == nil {
		return nil
	}
	return &TLS{CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile, ServerName: t.ServerName}
}

// WithDefaults returns e with timeout 30s, the default permanent
// statuses, content type application/octet-stream and max_header_bytes
// 16384 where they are unset.
func (e Endpoint) WithDefaults() Endpoint {
	setDefault(&e.Timeout, Duration(DefaultEndpointTimeout))
	if len(e.PermanentStatuses) == 0 {
		e.PermanentStatuses = slices.Clone(DefaultPermanentStatuses)
	}
	setDefault(&e.ContentType, DefaultEndpointContentType)
	setDefault(&e.MaxHeaderBytes, DefaultEndpointHeaderBytes)
	return e
}

// clone returns a deep copy of e (nil for nil).
func (e *Endpoint) clone() *Endpoint {
	if e == nil {
		return nil
	}
	out := *e
	out.PermanentStatuses = slices.Clone(e.PermanentStatuses)
	out.TLS = clonePtr(e.TLS)
	return &out
}

// validate reports the problems of e (defaults applied) under path
// ("workers[0].endpoint").
func (e *Endpoint) validate(p *problems, path string) {
	if e.URL == "" {
		p.add(path+".url", "required: the http:// or https:// URL the worker's messages are POSTed to")
	} else if u := checkURL(p, path+".url", e.URL, "http", "https"); u != nil {
		switch {
		case u.User != nil:
			p.add(path+".url", fmt.Sprintf("%q holds user information: give the credential as bearer_token", shown(e.URL)))
		case u.Fragment != "" || strings.HasSuffix(e.URL, "#"):
			p.add(path+".url", fmt.Sprintf("%q has a fragment, which HTTP never sends", shown(e.URL)))
		case e.TLS != nil && u.Scheme != "https":
			p.add(path+".tls", "set, but the url is not https://")
		}
	}
	if e.Timeout <= 0 {
		p.add(path+".timeout", fmt.Sprintf("%s is not positive", e.Timeout))
	}
	for i, s := range e.PermanentStatuses {
		switch {
		case s == 429:
			p.add(fmt.Sprintf("%s.permanent_statuses[%d]", path, i), "429 asks to retry later: it is never permanent")
		case s < 400 || s > 599:
			p.add(fmt.Sprintf("%s.permanent_statuses[%d]", path, i), fmt.Sprintf("%d is not an HTTP error status (400 to 599)", s))
		}
	}
	if e.MaxRedirects < 0 || e.MaxRedirects > MaxEndpointRedirects {
		p.add(path+".max_redirects", fmt.Sprintf("%d is not between 0 and %d", e.MaxRedirects, MaxEndpointRedirects))
	}
	if _, _, err := mime.ParseMediaType(e.ContentType); err != nil || !printableASCII(e.ContentType, true) {
		p.add(path+".content_type", fmt.Sprintf("%.60q is not a media type", e.ContentType))
	}
	if e.MaxHeaderBytes < MinEndpointHeaderBytes || e.MaxHeaderBytes > MaxEndpointHeaderBytes {
		p.add(path+".max_header_bytes", fmt.Sprintf("%d is not between %d and %d", e.MaxHeaderBytes, MinEndpointHeaderBytes, MaxEndpointHeaderBytes))
	}
	switch t := e.BearerToken; {
	case len(t) > MaxBearerTokenLen:
		p.add(path+".bearer_token", fmt.Sprintf("%d characters, more than %d", len(t), MaxBearerTokenLen))
	case !printableASCII(t, false):
		// Never shown: it is a secret.
		p.add(path+".bearer_token", "holds a space, a control or a non-ASCII character (a variable with a trailing newline?)")
	}
	e.TLS.ClientTLS().validate(p, path+".tls")
}

// endpointURL is an endpoint's URL for printing: masked as every URL, and
// every value of its query masked too, whatever its name.
func endpointURL(raw string) string {
	shown := redact.URL(raw)
	u, err := url.Parse(shown)
	if err != nil || u.RawQuery == "" {
		return shown
	}
	q := u.Query()
	for k := range q {
		q[k] = []string{Mask}
	}
	u.RawQuery = strings.ReplaceAll(q.Encode(), url.QueryEscape(Mask), Mask)
	return u.String()
}

// printableASCII reports whether s is printable ASCII (with spaces when
// spaces is set).
func printableASCII(s string, spaces bool) bool {
	for i := range len(s) {
		if c := s[i]; c < 0x21 || c > 0x7e {
			if c != ' ' || !spaces {
				return false
			}
		}
	}
	return true
}
