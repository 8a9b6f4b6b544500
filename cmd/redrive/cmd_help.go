package main

import (
	"context"
	"flag"
	"strings"
)

func init() {
	register(&command{
		name:    "help",
		summary: "Show help for redrive or one command",
		args:    "[command]",
		flags:   func(*flag.FlagSet) action { return help },
	})
}

// help prints the top-level usage, the commands of a group ("help config")
// or the usage of one command ("help config check").
func help(_ context.Context, inv *invocation) error {
	args := inv.args
	if len(args) == 0 {
		printUsage(inv.stdout)
		return nil
	}
	if _, ok := registry[args[0]]; !ok && len(args) == 1 && len(groupCommands(args[0])) > 0 {
		printGroupUsage(inv.stdout, args[0])
		return nil
	}
	cmd, rest, err := lookup(args)
	if err != nil {
		return err
	}
	if cmd == nil || len(rest) > 0 {
		return usageErrorf("unknown command %q (run 'redrive help')", strings.Join(args, " "))
	}
	fs, _, _ := newFlagSet(cmd)
	printCommandUsage(inv.stdout, cmd, fs)
	return nil
}
