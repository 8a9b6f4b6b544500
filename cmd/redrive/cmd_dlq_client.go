package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// adminClient talks to the admin API of `redrive serve`.
type adminClient struct {
	base  *url.URL
	token string
	actor string
	http  *http.Client
}

// adminFlags are the flags every dlq command takes.
type adminFlags struct {
	server, token, actor string
}

// register defines the flags on cmd.
func (f *adminFlags) register(cmd *cobra.Command) {
	f.registerServer(cmd, "admin API `URL` (default http:// + admin.listen)")
	cmd.Flags().StringVar(&f.actor, "actor", "", "`NAME` to record beside the name your token authenticates (the audit log shows \"you (as NAME)\"); default none")
}

// registerServer defines --server (described by usage) and --token on cmd.
func (f *adminFlags) registerServer(cmd *cobra.Command, usage string) {
	cmd.Flags().StringVar(&f.server, "server", "", usage)
	cmd.Flags().StringVar(&f.token, "token", "", "bearer `TOKEN`: your own, which names you in the audit log (default $REDRIVE_ADMIN_TOKEN, else admin.token)")
}

// newAdminClient resolves the server and the token: flags first, then
// $REDRIVE_ADMIN_TOKEN, then the configuration (loaded only when needed).
func newAdminClient(inv *invocation, f adminFlags) (*adminClient, error) {
	server, token := f.server, f.token
	if token == "" {
		token = os.Getenv("REDRIVE_ADMIN_TOKEN")
	}
	if server == "" || token == "" {
		c, err := inv.loadConfig()
		if err != nil {
			if server == "" {
				return nil, err
			}
		} else {
			if server == "" {
				server = "http://" + dialable(c.Admin.Listen)
			}
			if token == "" {
				token = c.Admin.Token
			}
		}
	}
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usageErrorf("--server %q is not an http:// or https:// URL", server)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return &adminClient{base: u, token: token, actor: f.actor, http: &http.Client{Timeout: time.Minute}}, nil
}

// dialable turns a listen address on every interface into one to dial.
func dialable(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return net.JoinHostPort(host, port)
}

// apiError is an error response of the admin API.
type apiError struct {
	status int
	code   string // the error body's code (admin.Code*), "" when none
	msg    string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%s (HTTP %d %s)", e.msg, e.status, http.StatusText(e.status))
}

// do sends a request to path (under /internal/v1/dlq) and decodes a 2xx
// JSON answer into out (a *[]byte receives it as it is). A 4xx answer is bad input (exit 2) carrying the
// server's message; a 5xx answer or an unreachable server is a runtime
// failure (exit 1).
func (c *adminClient) do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	return c.call(ctx, method, "/internal/v1/dlq"+path, query, body, out)
}

// call is do for any path of the API (/internal/v1/…).
func (c *adminClient) call(ctx context.Context, method, path string, query url.Values, body, out any) error {
	u := *c.base
	u.Path += path
	u.RawQuery = query.Encode()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json") // the API refuses writes without it, body or not
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.actor != "" {
		req.Header.Set("X-Redrive-Actor", c.actor)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return fmt.Errorf("admin API at %s unreachable: %w", c.base.Redacted(), err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer // sized by Content-Length: no doubling for a large answer
	if n := resp.ContentLength; n > 0 {
		buf.Grow(int(min(n, maxAnswer)) + bytes.MinRead)
	}
	_, err = buf.ReadFrom(io.LimitReader(resp.Body, maxAnswer))
	data := buf.Bytes()
	if err != nil {
		return fmt.Errorf("read the answer of %s %s: %w", method, u.Path, err)
	}
	if resp.StatusCode == http.StatusUnauthorized && c.token == "" {
		return usageErrorf("no token configured: set REDRIVE_ADMIN_TOKEN or --token (the admin API at %s asks for one)", c.base.Redacted())
	}
	if resp.StatusCode >= 300 {
		e := &apiError{status: resp.StatusCode, code: errorCode(data), msg: errorMessage(data)}
		if resp.StatusCode < 500 {
			return badInput(e)
		}
		return e
	}
	switch raw := out.(type) {
	case nil:
		return nil
	case *[]byte:
		*raw = data
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("the answer of %s %s is not what redrive expects: %w", method, u.Path, err)
	}
	return nil
}

// errorCode extracts the code of an error body; "" when there is none.
func errorCode(data []byte) string {
	var e struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(data, &e)
	return e.Code
}

// maxAnswer bounds an answer of the admin API the CLI reads.
const maxAnswer = 64 << 20

// errorMessage extracts the message of an error body, on one line.
func errorMessage(data []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	msg := strings.TrimSpace(string(data))
	if json.Unmarshal(data, &e) == nil && e.Error != "" {
		msg = e.Error
	}
	if msg == "" {
		msg = "no message"
	}
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return msg
}
