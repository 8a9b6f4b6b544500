package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// defaultConfigFile is the --config default when $REDRIVE_CONFIG is unset.
const defaultConfigFile = "configs/redrive.yaml"

// defaultConfigPath returns $REDRIVE_CONFIG, else defaultConfigFile.
func defaultConfigPath() string {
	if p := os.Getenv("REDRIVE_CONFIG"); p != "" {
		return p
	}
	return defaultConfigFile
}

// newRootCmd builds the command tree. Each command is built by a
// new*Cmd function in its own file (cmd_*.go); a tree is built per run,
// so flag values never leak from one run into the next.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "redrive",
		Short: "Retries, delays and dead-letter queues over RabbitMQ and Kafka",
		Args:  cobra.ArbitraryArgs,
		RunE: func(_ *cobra.Command, args []string) error {
			return unknownCommandf("unknown command %q (run 'redrive help')", args[0])
		},
		SilenceErrors:     true, // run prints them, one line each
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true}, // newCompletionCmd instead
	}
	root.PersistentFlags().String("config", "", "configuration `FILE` (default $REDRIVE_CONFIG, else "+defaultConfigFile+")")
	root.PersistentFlags().BoolP("help", "h", false, "show this help")
	_ = root.RegisterFlagCompletionFunc("config", completeConfigFile)
	root.SetFlagErrorFunc(flagError)
	root.SetHelpFunc(printHelp)
	root.SetHelpCommand(newHelpCmd())
	root.AddCommand(
		newAdminCmd(),
		newBenchCmd(),
		newCompletionCmd(),
		newGroupCmd("config", "Check the configuration", newConfigCheckCmd()),
		newDevCmd(),
		newDLQCmd(),
		newExporterCmd(),
		newLagCmd(),
		newPublishCmd(),
		newRelayCmd(),
		newServeCmd(),
		newGroupCmd("topology", "Plan, declare and delete the broker topology", newTopologyPlanCmd(), newTopologyApplyCmd(), newTopologyDeleteCmd()),
		newVersionCmd(),
		newWorkersCmd(),
	)
	noFileArgs(root)
	shortDurationDefaults(root)
	return root
}

// shortDurationDefaults makes the help of every duration flag under cmd
// print its default as it is written ("4m", "1h30m"), not as
// time.Duration.String gives it ("4m0s").
func shortDurationDefaults(cmd *cobra.Command) {
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Value.Type() == "duration" {
			f.DefValue = shortDuration(f.DefValue)
		}
	})
	for _, sub := range cmd.Commands() {
		shortDurationDefaults(sub)
	}
}

// shortDuration drops the zero units time.Duration.String ends with:
// "4m0s" is "4m", "1h0m0s" "1h", "1h30m0s" "1h30m"; "0s", "500ms" and
// "1m30s" stay.
func shortDuration(s string) string {
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// noFileArgs makes the positional arguments of every command under cmd
// that does not complete them itself complete nothing: no command takes
// a file as an argument (cobra's default is to offer files).
func noFileArgs(cmd *cobra.Command) {
	if cmd.ValidArgsFunction == nil && len(cmd.ValidArgs) == 0 {
		cmd.ValidArgsFunction = cobra.NoFileCompletions
	}
	for _, sub := range cmd.Commands() {
		noFileArgs(sub)
	}
}

// newGroupCmd returns a command that only groups subs ("config",
// "topology"): run alone or with an unknown word it is bad input naming
// its commands.
func newGroupCmd(name, short string, subs ...*cobra.Command) *cobra.Command {
	g := &cobra.Command{Use: name, Short: short, Args: cobra.ArbitraryArgs, RunE: groupRun,
		Annotations: map[string]string{groupAnnotation: "true"}}
	g.AddCommand(subs...)
	return g
}

// groupRun is the action of a command that groups others: none is named,
// or an unknown one.
func groupRun(cmd *cobra.Command, args []string) error {
	subs := strings.Join(subcommandNames(cmd), ", ")
	if len(args) == 0 {
		return usageErrorf("missing subcommand (%s)", subs)
	}
	return unknownCommandf("unknown command %q (%s)", commandName(cmd)+" "+args[0], subs)
}

// execute runs the command line args (without the program name) on root
// and returns the exit status; errors are printed on stderr, one line
// each, prefixed with the command's name.
func execute(ctx context.Context, root *cobra.Command, args []string, stdout, stderr io.Writer) int {
	root.SetArgs(append([]string{}, args...)) // never nil: cobra would read os.Args
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	name := ""
	var unknown *unknownCommandError
	if cmd != nil && !errors.As(err, &unknown) {
		name = commandName(cmd)
	}
	printError(stderr, name, err)
	return exitCode(err)
}

// commandName is cmd's path without "redrive": "dlq ls"; "" for the root.
func commandName(cmd *cobra.Command) string {
	path := cmd.CommandPath()
	if i := strings.IndexByte(path, ' '); i >= 0 {
		return path[i+1:]
	}
	return ""
}

// invocation is what a command's action gets besides its flags.
type invocation struct {
	stdout     io.Writer // for results
	stderr     io.Writer // for diagnostics
	configPath string    // --config, else defaultConfigPath
	args       []string  // positional arguments
}

// newInvocation describes the run of cmd with its positional args.
func newInvocation(cmd *cobra.Command, args []string) *invocation {
	return &invocation{stdout: cmd.OutOrStdout(), stderr: cmd.ErrOrStderr(), configPath: configFlag(cmd), args: args}
}

// configFlag is the --config of cmd, else defaultConfigPath.
func configFlag(cmd *cobra.Command) string {
	if p, _ := cmd.Flags().GetString("config"); p != "" {
		return p
	}
	return defaultConfigPath()
}

// noArgs refuses positional arguments (cobra.NoArgs with redrive's
// message).
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("unexpected argument %q", args[0])
	}
	return nil
}

// rangeArgs accepts min to max positional arguments; the error repeats the
// synopsis.
func rangeArgs(minArgs, maxArgs int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < minArgs || len(args) > maxArgs {
			name := commandName(cmd)
			return usageErrorf("usage: redrive %s [flags] %s (run 'redrive %s --help')", name, synopsisArgs(cmd), name)
		}
		return nil
	}
}

// exactArgs is rangeArgs(n, n).
func exactArgs(n int) cobra.PositionalArgs { return rangeArgs(n, n) }

// synopsisArgs is the positional part of cmd's Use: "DLQ ID" of
// "show DLQ ID".
func synopsisArgs(cmd *cobra.Command) string {
	_, args, _ := strings.Cut(cmd.Use, " ")
	return args
}

// subcommandNames lists the names of cmd's visible subcommands, as
// "dlq ls", sorted (cobra keeps them sorted).
func subcommandNames(cmd *cobra.Command) []string {
	var out []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			out = append(out, commandName(c))
		}
	}
	return out
}

// unknownCommandError is a command line naming no command; it is printed
// without a command's name.
type unknownCommandError struct{ msg string }

// Error returns the message.
func (e *unknownCommandError) Error() string { return e.msg }

// unknownCommandf is bad input naming no command.
func unknownCommandf(format string, args ...any) error {
	return badInput(&unknownCommandError{msg: fmt.Sprintf(format, args...)})
}
