package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/redrive/redrive/dlq/access"
	"github.com/redrive/redrive/dlq/admin"
)

// newAdminCmd is redrive admin: operators' tokens and identity.
func newAdminCmd() *cobra.Command {
	return newGroupCmd("admin", "Operators' tokens (admin.operators) and who the admin API takes you for",
		newAdminHashTokenCmd(), newAdminWhoamiCmd())
}

// hashTokenFlags are the flags of admin hash-token.
type hashTokenFlags struct {
	name, role string
	generate   bool
}

func newAdminHashTokenCmd() *cobra.Command {
	var f hashTokenFlags
	cmd := &cobra.Command{
		Use:   "hash-token",
		Short: "Print the hash of a token for admin.operators (or make a new token)",
		Long: `Reads a token from standard input (one line; never from the command line,
where other users and the shell's history would see it) and prints the hash
that admin.operators[].token_hash keeps of it: "sha256:" and 64 hex digits.
With --name and --role it prints the whole entry to paste under
admin.operators. --generate makes a new random token (256 bits) instead of
reading one, and prints it on the first line: hand it to its holder and do
not keep it; the configuration keeps only its hash.

A token must be at least 32 characters: its hash is not secret, and a
shorter token could be found from it by guessing (--generate makes one).

  redrive admin hash-token --generate --name alice --role operator
  printf %s "$TOKEN" | redrive admin hash-token`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return hashToken(newInvocation(cmd, args), cmd.InOrStdin(), f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.name, "name", "", "the holder's `NAME`, as the audit log will show it (prints an admin.operators entry)")
	fs.StringVar(&f.role, "role", "", "the holder's `ROLE` with --name: operator or viewer")
	fs.BoolVar(&f.generate, "generate", false, "make a new random token instead of reading one")
	_ = cmd.RegisterFlagCompletionFunc("role", cobra.FixedCompletions([]string{"operator", "viewer"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// maxTokenLine bounds the line hash-token reads.
const maxTokenLine = 4096

// hashToken prints the hash of the token on in (or of a new one), as a
// bare hash or an admin.operators entry.
func hashToken(inv *invocation, in io.Reader, f hashTokenFlags) error {
	switch {
	case f.name != "" && access.CheckName(f.name) != nil:
		return usageErrorf("--name: %v", errors.Unwrap(access.CheckName(f.name)))
	case f.name != "" && f.role != string(access.Operator) && f.role != string(access.Viewer):
		return usageErrorf("--role %q: operator or viewer (required with --name)", f.role)
	case f.name == "" && f.role != "":
		return usageErrorf("--role needs --name")
	}
	var tok string
	if f.generate {
		tok = access.NewToken()
	} else {
		line, err := bufio.NewReader(io.LimitReader(in, maxTokenLine+1)).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read the token from standard input: %w", err)
		}
		tok = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		switch {
		case tok == "":
			return usageErrorf("no token on standard input: pipe one in (printf %%s \"$TOKEN\" | redrive admin hash-token), or make one with --generate")
		case len(line) > maxTokenLine:
			return usageErrorf("the line on standard input is longer than %d bytes: not a token", maxTokenLine)
		}
	}
	hash, err := access.HashTokenChecked(tok)
	if err != nil {
		return badInput(err)
	}
	if f.generate {
		fmt.Fprintln(inv.stdout, tok)
		fmt.Fprintln(inv.stderr, "redrive: the first line is the new token: hand it to its holder and keep no copy; the configuration keeps only its hash")
	}
	if f.name == "" {
		_, err = fmt.Fprintln(inv.stdout, hash)
		return err
	}
	name, _ := json.Marshal(f.name) // a JSON string is a YAML double-quoted scalar
	_, err = fmt.Fprintf(inv.stdout, "- {name: %s, role: %s, token_hash: %q}\n", name, f.role, hash)
	return err
}

func newAdminWhoamiCmd() *cobra.Command {
	var a adminFlags
	var output *outputFormat
	cmd := &cobra.Command{
		Use:   "whoami",
		Short: "Show who the admin API takes you for: name, role, and what the audit log would record",
		Long: `Asks the admin API (GET /internal/v1/whoami) who your token (or the
authenticating proxy in front of it) makes you: the name the audit log
records, your role (operator or viewer), how you were recognised (token,
proxy, none) and, with --actor, the actor a change would be audited as.
Changes nothing.

` + dlqHelp,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return whoami(cmd.Context(), newInvocation(cmd, args), a, output)
		},
	}
	a.register(cmd)
	output = addOutputFlag(cmd)
	return cmd
}

// whoami prints who the admin API takes the caller for.
func whoami(ctx context.Context, inv *invocation, f adminFlags, output *outputFormat) error {
	c, err := newAdminClient(inv, f)
	if err != nil {
		return err
	}
	var w admin.Whoami
	return c.fetch(ctx, inv, "/internal/v1/whoami", nil, output.json(), &w, func() error {
		_, err := fmt.Fprintf(inv.stdout, "%s (%s, by %s); audited as %s\n", printable(w.Name), printable(w.Role), printable(w.Via), printable(w.Actor))
		return err
	})
}
