package main

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/redrive/redrive/internal/assembly/config"
	"github.com/redrive/redrive/internal/assembly/daemon"
)

// completionShells are the shells redrive completion writes a script for.
var completionShells = []string{"bash", "fish", "zsh"}

func newCompletionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "completion SHELL",
		Short: "Print the shell completion script for bash, zsh or fish",
		Long: `Prints the completion script of SHELL (bash, zsh or fish) on standard
output. It completes the commands, their flags and the values of some:
--output, --config (YAML files), the DLQ arguments of 'redrive dlq ...'
(the DLQs of the configured workers and kafka.foreign_dlqs) and the WORKER
and TYPE arguments of 'redrive workers ...' (the configured workers), read
from the configuration (--config, default $REDRIVE_CONFIG, else
configs/redrive.yaml) when you press TAB.

  bash  source <(redrive completion bash)   # in ~/.bashrc; needs bash-completion
  zsh   redrive completion zsh > "${fpath[1]}/_redrive"   # then restart zsh
  fish  redrive completion fish > ~/.config/fish/completions/redrive.fish

See docs/cli.md.`,
		ValidArgs: completionShells,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := exactArgs(1)(cmd, args); err != nil {
				return err
			}
			if !slices.Contains(completionShells, args[0]) {
				return usageErrorf("unknown shell %q (bash, zsh or fish)", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			root, w := cmd.Root(), cmd.OutOrStdout()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(w, true)
			case "zsh":
				return root.GenZshCompletion(w)
			default:
				return root.GenFishCompletion(w, true)
			}
		},
	}
}

// completeDLQ completes the first argument of the dlq commands with the
// DLQs the configuration names (daemon.DLQNames).
func completeDLQ(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return completeFromConfig(cmd, toComplete, daemon.DLQNames)
}

// completeWorker completes the first argument of the workers commands
// (WORKER, TYPE) with the configured workers' names.
func completeWorker(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return completeFromConfig(cmd, toComplete, func(c *config.Config) ([]string, error) { return daemon.WorkerNames(c), nil })
}

// completeTopic completes --topic with the configured workers' topics.
func completeTopic(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return completeFromConfig(cmd, toComplete, func(c *config.Config) ([]string, error) {
		out := make([]string, 0, len(c.Workers))
		for _, w := range c.Workers {
			out = append(out, w.Topic)
		}
		return out, nil
	})
}

// completeConfigFile completes --config with YAML files.
func completeConfigFile(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return []cobra.Completion{"yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt
}

// completeFromConfig completes with the names that names reads from the
// configuration of cmd (--config): those starting with toComplete, sorted,
// once each. A configuration that does not load completes nothing (TAB
// must not print errors). The names are the configuration's, not
// redrive's: a name that a shell could not take as one word (blank or
// control characters, a leading dash, invalid UTF-8) is left out rather
// than break the completion protocol, which is one candidate per line.
func completeFromConfig(cmd *cobra.Command, toComplete string, names func(*config.Config) ([]string, error)) ([]cobra.Completion, cobra.ShellCompDirective) {
	c, err := config.Load(configFlag(cmd))
	if err != nil {
		cobra.CompDebugln(fmt.Sprintf("load config: %v", err), true)
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	all, err := names(c)
	if err != nil {
		cobra.CompDebugln(fmt.Sprintf("names: %v", err), true)
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, n := range all {
		if completable(n) && strings.HasPrefix(n, toComplete) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), cobra.ShellCompDirectiveNoFileComp
}

// completable reports whether name can be offered as one completion word.
func completable(name string) bool {
	if name == "" || strings.HasPrefix(name, "-") || !utf8.ValidString(name) {
		return false
	}
	return !strings.ContainsFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r == unicode.ReplacementChar })
}
