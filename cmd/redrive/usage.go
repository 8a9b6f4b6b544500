package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// printUsage writes the top-level usage: the registered commands.
func printUsage(w io.Writer) {
	fmt.Fprint(w, `redrive: retries, delays and dead-letter queues over RabbitMQ and Kafka.

Usage:
  redrive <command> [flags]

Commands:
`)
	names := make([]string, 0, len(registry))
	for name := range registry {
		names = append(names, name)
	}
	slices.Sort(names)
	printCommandList(w, names)
	fmt.Fprintf(w, `
Every command takes --config FILE (default $REDRIVE_CONFIG, else %s).
Run 'redrive <command> --help' for its flags.

Exit status: 0 success, 1 runtime failure, 2 bad input (usage or configuration);
redrive workers also 3 (worst severity WARNING) and 4 (CRITICAL).
`, defaultConfigFile)
}

// printGroupUsage writes the commands of a group ("config").
func printGroupUsage(w io.Writer, group string) {
	fmt.Fprintf(w, "Usage:\n  redrive %s <command> [flags]\n\nCommands:\n", group)
	printCommandList(w, groupCommands(group))
}

// printCommandList writes "name  summary" lines.
func printCommandList(w io.Writer, names []string) {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	for _, name := range names {
		fmt.Fprintf(tw, "  %s\t%s\n", name, registry[name].summary)
	}
	tw.Flush()
}

// printCommandUsage writes the --help of one command.
func printCommandUsage(w io.Writer, cmd *command, fs *flag.FlagSet) {
	synopsis := "redrive " + cmd.name + " [flags]"
	if cmd.args != "" {
		synopsis += " " + cmd.args
	}
	fmt.Fprintf(w, "Usage:\n  %s\n\n%s.\n", synopsis, cmd.summary)
	if cmd.help != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(cmd.help))
	}
	fmt.Fprint(w, "\nFlags:\n")
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fs.VisitAll(func(f *flag.Flag) {
		typ, usage := flag.UnquoteUsage(f)
		name := "--" + f.Name
		if typ != "" {
			name += " " + typ
		}
		if f.DefValue != "" && f.DefValue != "false" && f.Name != "config" {
			usage += fmt.Sprintf(" (default %q)", f.DefValue)
		}
		fmt.Fprintf(tw, "  %s\t%s\n", name, usage)
	})
	fmt.Fprintf(tw, "  -h, --help\tshow this help\n")
	tw.Flush()
}
