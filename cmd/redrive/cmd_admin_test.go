package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/redrive/redrive/dlq/access"
	"github.com/redrive/redrive/internal/assembly/config"
)

// cliIn is cli with stdin.
func cliIn(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRootCmd()
	root.SetIn(strings.NewReader(stdin))
	code = execute(context.Background(), root, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// hash-token prints what admin.operators keeps of a token read from
// stdin, or of a new one; its entry loads as a configuration; what is
// not a token, or not a name, is bad input.
func TestAdminHashToken(t *testing.T) {
	const tok = "a-token-of-alice-0123456789-abcdefgh"
	for _, in := range []string{tok, tok + "\n", tok + "\r\n"} {
		if code, out, errOut := cliIn(t, in, "admin", "hash-token"); code != exitOK || out != access.HashToken(tok)+"\n" {
			t.Errorf("hash-token of %q: %d %q %q", in, code, out, errOut)
		}
	}

	code, out, errOut := cliIn(t, "", "admin", "hash-token", "--generate", "--name", "Zoë \"Z\" Müller: ops #1", "--role", "viewer")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != exitOK || len(lines) != 2 || len(lines[0]) < access.MinHashedTokenLen || !strings.Contains(errOut, "new token") {
		t.Fatalf("hash-token --generate: %d %q %q", code, out, errOut)
	}
	path := writeConfig(t, "broker: rabbitmq\nadmin:\n  operators:\n    "+lines[1]+"\n")
	c, err := config.Load(path)
	if err != nil {
		t.Fatalf("the printed entry does not load: %v\n%s", err, lines[1])
	}
	a, err := access.New(c.Admin.Access())
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := a.Token(lines[0]); !ok || id.Name != "Zoë \"Z\" Müller: ops #1" || id.Role != access.Viewer {
		t.Errorf("the generated token is %+v, %v; want the viewer Zoë", id, ok)
	}

	for _, tc := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"", nil, "no token on standard input"},
		{"\n", nil, "no token on standard input"},
		{"short-token\n", nil, "shorter than 32 characters"},
		{"x", nil, "shorter than 8 characters"},
		{" " + tok, nil, "white space"},
		{strings.Repeat("t", 5000), nil, "longer than 4096 bytes"},
		{tok, []string{"--name", "al\x1bice", "--role", "operator"}, "--name"},
		{tok, []string{"--name", "redrive-archiver", "--role", "operator"}, "--name"},
		{tok, []string{"--name", "alice"}, "--role"},
		{tok, []string{"--name", "alice", "--role", "admin"}, "--role"},
		{tok, []string{"--role", "viewer"}, "--role needs --name"},
		{tok, []string{"extra"}, "unexpected argument"},
	} {
		code, out, errOut := cliIn(t, tc.stdin, append([]string{"admin", "hash-token"}, tc.args...)...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("hash-token %q <%.20q: %d %q %q; want exit 2 and one line naming %q", tc.args, tc.stdin, code, out, errOut, tc.want)
		}
		if strings.Contains(errOut, tok) {
			t.Errorf("hash-token %q printed the token: %q", tc.args, errOut)
		}
	}
	if code, out, _ := cli(t, "admin"); code != exitUsage || out != "" {
		t.Errorf("admin alone: %d %q", code, out)
	}
}
