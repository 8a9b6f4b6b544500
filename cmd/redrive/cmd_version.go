package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time: go build -ldflags "-X main.version=v1.2.3".
// When empty, the module version from the build information is used.
var version string

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and build of this binary",
		Long: `Prints "redrive VERSION [COMMIT[-dirty] COMMIT-TIME] GO-VERSION OS/ARCH" from
the build information Go embeds: VERSION is the module version
(` + "`go install github.com/redrive/redrive/cmd/redrive@v0.1.0`" + ` gives v0.1.0; a
build in a git checkout gives a pseudo-version, or (devel)), or what
-ldflags "-X main.version=..." set; COMMIT is the first 12 hex digits of
the git commit the binary was built from, -dirty when the work tree had
uncommitted changes, and its time (UTC). A binary built without version
control information (go build -buildvcs=false, go run) has no commit.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return printVersion(cmd.Context(), newInvocation(cmd, args))
		},
	}
}

// printVersion prints versionString.
func printVersion(_ context.Context, inv *invocation) error {
	_, err := fmt.Fprintln(inv.stdout, versionString())
	return err
}

// versionString describes this build.
func versionString() string {
	info, _ := debug.ReadBuildInfo()
	return describeBuild(info, version, runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH)
}

// describeBuild renders "redrive <version> [<commit>[-dirty] <time>]
// <platform>" from info (nil when the binary has none) and the version set
// with -ldflags (preferred when not empty).
func describeBuild(info *debug.BuildInfo, ldflags, platform string) string {
	v, commit, at := ldflags, "", ""
	if info != nil {
		if v == "" {
			v = info.Main.Version
		}
		var modified bool
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value[:min(len(s.Value), 12)]
			case "vcs.time":
				at = s.Value
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
	if at != "" {
		s += " " + at
	}
	return s + " " + platform
}
