package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/redrive/redrive/internal/assembly/config"
)

// flagError is the command tree's flag error function: it rewrites a parse
// error of cmd's flags as one line naming the flag (--name) and the value,
// with the closest flag as a hint for an unknown one, and what to run for
// help. It is bad input.
func flagError(cmd *cobra.Command, err error) error {
	msg := err.Error()
	var (
		notExist *pflag.NotExistError
		required *pflag.ValueRequiredError
		invalid  *pflag.InvalidValueError
	)
	switch {
	case errors.As(err, &notExist):
		name := notExist.GetSpecifiedName()
		if short := notExist.GetSpecifiedShortnames(); len(short) > 1 {
			// -no-samples: a long flag written with one dash (Go's flag
			// package took it).
			name, _, _ = strings.Cut(short, "=")
			if cmd.Flags().Lookup(name) != nil {
				msg = fmt.Sprintf("-%s: long flags take two dashes: --%s", name, name)
				break
			}
		} else if short != "" {
			msg = "unknown flag -" + name
			break
		}
		msg = "unknown flag --" + name
		var names []string
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden {
				names = append(names, f.Name)
			}
		})
		if s := config.Suggest(name, names); s != "" {
			msg += fmt.Sprintf("; did you mean --%s?", s)
		}
	case errors.As(err, &required):
		msg = "flag needs an argument: --" + required.GetFlag().Name
	case errors.As(err, &invalid):
		cause := errors.Unwrap(invalid)
		var num *strconv.NumError
		if invalid.GetFlag().Value.Type() == "duration" {
			cause = fmt.Errorf("%q is not a duration (such as 5s or 1m)", invalid.GetValue())
		} else if errors.As(cause, &num) {
			cause = num.Err
			if errors.Is(num.Err, strconv.ErrSyntax) {
				cause = errors.New("parse error")
			}
		}
		msg = fmt.Sprintf("invalid value %q for flag --%s: %v", invalid.GetValue(), invalid.GetFlag().Name, cause)
	}
	return usageErrorf("%s (run 'redrive %s --help')", msg, commandName(cmd))
}

// addActorFlag defines --actor, the audit log's who, on cmd: every
// audited command takes it. The default is $USER (actorOrUser).
func addActorFlag(cmd *cobra.Command, actor *string) {
	cmd.Flags().StringVar(actor, "actor", "", "`NAME` recorded in the audit log (default $USER)")
}

// addReasonFlag defines --reason, the audit log's why, on cmd; what says
// what is audited.
func addReasonFlag(cmd *cobra.Command, reason *string, what string) {
	cmd.Flags().StringVar(reason, "reason", "", "why "+what+", for the audit log (`TEXT`, required)")
}
