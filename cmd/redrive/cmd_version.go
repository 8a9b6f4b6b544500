package main

import (
	"context"
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
	"runtime/debug"
)

// version is set at build time: go build -ldflags "-X main.version=v1.2.3".
// When empty, the module version from the build information is used.
var version string

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return printVersion(cmd.Context(), newInvocation(cmd, args))
		},
	}
}

// printVersion prints "redrive <version> [<commit>] <go version> <os>/<arch>".
func printVersion(_ context.Context, inv *invocation) error {
	_, err := fmt.Fprintln(inv.stdout, versionString())
	return err
}

// versionString describes this build.
func versionString() string {
	v, commit := version, ""
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = info.Main.Version
		}
		var modified bool
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value[:min(len(s.Value), 12)]
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if commit != "" && modified {
			commit += "-dirty"
		}
	}
	if v == "" {
		v = "(devel)"
	}
	s := "redrive " + v
	if commit != "" {
		s += " " + commit
	}
	return fmt.Sprintf("%s %s %s/%s", s, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
