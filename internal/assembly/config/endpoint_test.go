package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/testsupport/tlstest"
)

func TestEndpointRules(t *testing.T) {
	files := tlstest.Generate(t)
	worker := func(endpoint string) string {
		return "broker: rabbitmq\nworkers:\n  - {name: w, topic: t, endpoint: " + endpoint + "}\n"
	}
	tests := []struct {
		name, doc string
		vars      map[string]string
		want      []string
	}{
		{"minimal", worker("{url: \"http://127.0.0.1:8080/events\"}"), nil, nil},
		{"everything", worker(`{url: "https://h:8443/e?code=1", timeout: 2s, permanent_statuses: [400, 409, 500], max_redirects: 2,
  content_type: "application/json; charset=utf-8", max_header_bytes: 4096, bearer_token: "${TOKEN}",
  tls: {ca_file: "` + files.CA + `", cert_file: "` + files.ClientCert + `", key_file: "` + files.ClientKey + `", server_name: h}}`),
			map[string]string{"TOKEN": "s3cr3t-t0ken"}, nil},
		{"url missing", worker("{timeout: 1s}"), nil,
			[]string{"workers[0].endpoint.url: required: the http:// or https:// URL the worker's messages are POSTed to"}},
		{"url scheme", worker("{url: \"ftp://h/\"}"), nil, []string{`workers[0].endpoint.url: scheme "ftp" is not http or https`}},
		{"url without host", worker("{url: \"http:///x\"}"), nil, []string{`workers[0].endpoint.url: "http:///x" has no host`}},
		{"url with user", worker("{url: \"https://u:pw@h/\"}"), nil,
			[]string{`workers[0].endpoint.url: "https://u:***@h/" holds user information: give the credential as bearer_token`}},
		{"url with fragment", worker("{url: \"https://h/#x\"}"), nil, []string{`workers[0].endpoint.url: "https://h/#x" has a fragment, which HTTP never sends`}},
		{"tls on http", worker("{url: \"http://h/\", tls: {server_name: h}}"), nil, []string{"workers[0].endpoint.tls: set, but the url is not https://"}},
		{"tls file missing", worker("{url: \"https://h/\", tls: {ca_file: /nonexistent/ca.pem}}"), nil,
			[]string{"workers[0].endpoint.tls.ca_file: cannot be read: open /nonexistent/ca.pem: no such file or directory"}},
		{"tls cert without key", worker("{url: \"https://h/\", tls: {cert_file: \"" + files.ClientCert + "\"}}"), nil,
			[]string{"workers[0].endpoint.tls: cert_file and key_file go together"}},
		{"timeout", worker("{url: \"http://h/\", timeout: -1s}"), nil, []string{"workers[0].endpoint.timeout: -1s is not positive"}},
		{"permanent statuses", worker("{url: \"http://h/\", permanent_statuses: [404, 429, 200, 600]}"), nil, []string{
			"workers[0].endpoint.permanent_statuses[1]: 429 asks to retry later: it is never permanent",
			"workers[0].endpoint.permanent_statuses[2]: 200 is not an HTTP error status (400 to 599)",
			"workers[0].endpoint.permanent_statuses[3]: 600 is not an HTTP error status (400 to 599)"}},
		{"redirects", worker("{url: \"http://h/\", max_redirects: 11}"), nil, []string{"workers[0].endpoint.max_redirects: 11 is not between 0 and 10"}},
		{"content type", worker("{url: \"http://h/\", content_type: \"not a type\"}"), nil, []string{`workers[0].endpoint.content_type: "not a type" is not a media type`}},
		{"header bytes", worker("{url: \"http://h/\", max_header_bytes: 100}"), nil, []string{"workers[0].endpoint.max_header_bytes: 100 is not between 1024 and 1048576"}},
		{"token with newline, never shown", worker("{url: \"http://h/\", bearer_token: \"${TOKEN}\"}"), map[string]string{"TOKEN": "s3cr3t\n"},
			[]string{"workers[0].endpoint.bearer_token: holds a space, a control or a non-ASCII character (a variable with a trailing newline?)"}},
		{"token too long", worker("{url: \"http://h/\", bearer_token: \"${TOKEN}\"}"), map[string]string{"TOKEN": strings.Repeat("t", 4097)},
			[]string{"workers[0].endpoint.bearer_token: 4097 characters, more than 4096"}},
		{"relay listen", "broker: rabbitmq\nrelay: {listen: nowhere}", nil, []string{`relay.listen: "nowhere" is not host:port`}},
		{"relay listen conflict", "broker: rabbitmq\nrelay: {listen: \"127.0.0.1:9477\"}", nil,
			[]string{`relay.listen: "127.0.0.1:9477" is exporter.listen's address too ("127.0.0.1:9477"): they need different ports`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parse([]byte(tc.doc), env(tc.vars))
			if err == nil && tc.want != nil {
				t.Fatalf("parsed %+v, want problems %q", c, tc.want)
			}
			assertLines(t, err, tc.want...)
		})
	}
}

func TestEndpointDefaults(t *testing.T) {
	c := mustParse(t, "broker: kafka\nkafka: {brokers: [k:9092]}\nworkers:\n  - {name: w, topic: t, endpoint: {url: \"http://h/\"}}\n  - {name: v, topic: t}\n", nil)
	e := c.Workers[0].Endpoint
	if e == nil || time.Duration(e.Timeout) != DefaultEndpointTimeout || !slices.Equal(e.PermanentStatuses, []int{400, 404, 410, 422}) ||
		e.ContentType != DefaultEndpointContentType || e.MaxHeaderBytes != DefaultEndpointHeaderBytes || e.MaxRedirects != 0 || e.TLS != nil {
		t.Errorf("endpoint with defaults = %+v", e)
	}
	if c.Workers[1].Endpoint != nil {
		t.Errorf("a worker without endpoint got %+v", c.Workers[1].Endpoint)
	}
	if c.Relay.Listen != DefaultRelayListen {
		t.Errorf("relay.listen = %q, want %q", c.Relay.Listen, DefaultRelayListen)
	}
}

// The bearer token never shows in Redacted output, and Clone copies the
// endpoint deeply.
func TestEndpointRedactedAndCloned(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "redrive.yaml")
	doc := "broker: rabbitmq\nworkers:\n  - {name: w, topic: t, endpoint: {url: \"https://h/e?token=q5ecret&code=c0de5ecret\", bearer_token: \"${TOKEN}\", permanent_statuses: [400]}}\n"
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	c := mustParse(t, doc, map[string]string{"TOKEN": "b3arer-s3cret"})
	r := c.Redacted()
	if got := r.Workers[0].Endpoint; got.BearerToken != Mask || strings.Contains(got.URL, "q5ecret") || strings.Contains(got.URL, "c0de5ecret") ||
		!strings.HasPrefix(got.URL, "https://h/e?") {
		t.Errorf("redacted endpoint = %+v", got)
	}
	if c.Workers[0].Endpoint.BearerToken != "b3arer-s3cret" {
		t.Error("Redacted changed the original")
	}
	if got := endpointURL("https://h/e?code=c0de5ecret&x=1"); got != "https://h/e?code=***&x=***" {
		t.Errorf("endpointURL = %q, want every query value masked", got)
	}
	cl := c.Clone()
	cl.Workers[0].Endpoint.PermanentStatuses[0] = 500
	cl.Workers[0].Endpoint.URL = "http://other/"
	if c.Workers[0].Endpoint.PermanentStatuses[0] != 400 || c.Workers[0].Endpoint.URL != "https://h/e?token=q5ecret&code=c0de5ecret" {
		t.Error("Clone shares the endpoint")
	}
}
