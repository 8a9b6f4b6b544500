package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// groupAnnotation marks a command that only groups others ("config"):
// its help lists them instead of a synopsis.
const groupAnnotation = "redrive-group"

// printHelp is the help of cmd (--help, -h, redrive help ...): the command
// list for the root, a group's commands, else the command's usage.
func printHelp(cmd *cobra.Command, _ []string) {
	w := cmd.OutOrStdout()
	switch {
	case !cmd.HasParent():
		printUsage(w, cmd)
	case cmd.Annotations[groupAnnotation] != "":
		fmt.Fprintf(w, "Usage:\n  redrive %s <command> [flags]\n\nCommands:\n", commandName(cmd))
		printCommandList(w, cmd.Commands())
	default:
		printCommandUsage(w, cmd)
	}
}

// printUsage writes the top-level usage: every command, with its words.
func printUsage(w io.Writer, root *cobra.Command) {
	fmt.Fprint(w, `redrive: retries, delays and dead-letter queues over RabbitMQ and Kafka.

Usage:
  redrive <command> [flags]

Commands:
`)
	printCommandList(w, leafCommands(root))
	fmt.Fprintf(w, `
Every command takes --config FILE (default $REDRIVE_CONFIG, else %s);
listings take --output table|json. Flags may come before or after the
arguments. Run 'redrive <command> --help' for its flags, and
'redrive completion bash|zsh|fish' for shell completion.

Exit status: 0 success, 1 runtime failure, 2 bad input (usage or configuration);
redrive workers also 3 (worst severity WARNING) and 4 (CRITICAL).
`, defaultConfigFile)
}

// leafCommands lists the commands under cmd that run something (groups
// only group), depth first.
func leafCommands(cmd *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, c := range cmd.Commands() {
		if !c.IsAvailableCommand() && c.Name() != "help" {
			continue
		}
		if c.Annotations[groupAnnotation] == "" {
			out = append(out, c)
		}
		out = append(out, leafCommands(c)...)
	}
	slices.SortFunc(out, func(a, b *cobra.Command) int { return strings.Compare(commandName(a), commandName(b)) })
	return out
}

// printCommandList writes "name  summary" lines.
func printCommandList(w io.Writer, cmds []*cobra.Command) {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	for _, c := range cmds {
		if c.IsAvailableCommand() || c.Name() == "help" {
			fmt.Fprintf(tw, "  %s\t%s\n", commandName(c), c.Short)
		}
	}
	tw.Flush()
}

// printCommandUsage writes the --help of one command: synopsis, summary,
// description, flags (its own and the inherited --config and --help) and
// its subcommands.
func printCommandUsage(w io.Writer, cmd *cobra.Command) {
	cmd.InitDefaultHelpFlag()
	synopsis := "redrive " + commandName(cmd) + " [flags]"
	if args := synopsisArgs(cmd); args != "" {
		synopsis += " " + args
	}
	fmt.Fprintf(w, "Usage:\n  %s\n\n%s.\n", synopsis, cmd.Short)
	if len(cmd.Aliases) > 0 {
		parent := strings.TrimSuffix(commandName(cmd), cmd.Name())
		fmt.Fprintf(w, "\nAlso: redrive %s%s\n", parent, strings.Join(cmd.Aliases, ", redrive "+parent))
	}
	if cmd.Long != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(cmd.Long))
	}
	fs := pflag.NewFlagSet(cmd.Name(), pflag.ContinueOnError)
	fs.AddFlagSet(cmd.LocalFlags())
	fs.AddFlagSet(cmd.InheritedFlags())
	fmt.Fprintf(w, "\nFlags:\n%s", fs.FlagUsages())
	if cmd.HasAvailableSubCommands() {
		fmt.Fprint(w, "\nCommands:\n")
		printCommandList(w, cmd.Commands())
	}
}
