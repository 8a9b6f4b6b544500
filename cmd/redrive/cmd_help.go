package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// newHelpCmd is redrive help: the top-level usage, the commands of a group
// ("help config") or the usage of one command ("help config check").
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Show help for redrive or one command",
		Args:  cobra.ArbitraryArgs,
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			c, rest, err := cmd.Root().Find(args)
			if err != nil || len(rest) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, sub := range c.Commands() {
				if sub.IsAvailableCommand() && strings.HasPrefix(sub.Name(), toComplete) {
					out = append(out, cobra.CompletionWithDesc(sub.Name(), sub.Short))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			if len(args) == 0 {
				printUsage(cmd.OutOrStdout(), root)
				return nil
			}
			c, rest, err := root.Find(args)
			if err != nil || c == root || len(rest) > 0 {
				return usageErrorf("unknown command %q (run 'redrive help')", strings.Join(args, " "))
			}
			printHelp(c, nil)
			return nil
		},
	}
}
