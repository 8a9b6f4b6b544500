package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"
)

// Output formats of --output.
const (
	outputTable = "table"
	outputJSON  = "json"
)

// outputFormat is the value of --output: table (for people, the default)
// or json (for scripts: the server's JSON where there is a server).
type outputFormat string

// String returns the format.
func (o *outputFormat) String() string { return string(*o) }

// Set accepts table or json.
func (o *outputFormat) Set(s string) error {
	if s != outputTable && s != outputJSON {
		return errors.New("table or json")
	}
	*o = outputFormat(s)
	return nil
}

// Type names the value in the help.
func (o *outputFormat) Type() string { return "FORMAT" }

// json reports whether the format is json.
func (o *outputFormat) json() bool { return *o == outputJSON }

// jsonAlias is the deprecated --json: --output json.
type jsonAlias struct{ out *outputFormat }

// String is false: the flag has no state of its own.
func (j jsonAlias) String() string { return "false" }

// Set sets --output json for true.
func (j jsonAlias) Set(s string) error {
	on, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("true or false")
	}
	if on {
		*j.out = outputJSON
	}
	return nil
}

// Type is bool, so that --json takes no value.
func (j jsonAlias) Type() string { return "bool" }

// addOutputFlag defines --output on cmd, the flag of every listing, and
// the hidden --json, which scripts written before --output use.
func addOutputFlag(cmd *cobra.Command) *outputFormat {
	out := outputFormat(outputTable)
	fs := cmd.Flags()
	fs.Var(&out, "output", "print a `FORMAT`: table or json")
	fs.Var(jsonAlias{&out}, "json", "same as --output json (deprecated)")
	fs.Lookup("json").NoOptDefVal = "true"
	_ = fs.MarkHidden("json")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{outputTable, outputJSON}, cobra.ShellCompDirectiveNoFileComp))
	return &out
}

// writeJSON prints v as indented JSON, the --output json of the commands
// that answer from redrive itself rather than from the admin API.
func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode JSON: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
