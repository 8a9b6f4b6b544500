package main

import (
	"flag"
	"fmt"
	"regexp"
	"strings"

	"github.com/redrive/redrive/internal/config"
)

// flagMessage matches the flag package's errors that name a flag with
// one dash: "flag provided but not defined: -x", "invalid value "v" for
// flag -x: …", "invalid boolean value "v" for -x: …", "flag needs an
// argument: -x".
var flagMessage = regexp.MustCompile(`^(flag provided but not defined: |invalid value ".*" for flag |invalid boolean value ".*" for |flag needs an argument: )-([^\s:=]+)(.*)$`)

// flagError rewrites a parse error of fs as redrive's flags are written:
// --name, an unknown flag as "unknown flag --name" with the closest flag
// of fs as a hint, and what to run for help.
func flagError(fs *flag.FlagSet, cmd string, err error) error {
	msg := err.Error()
	if m := flagMessage.FindStringSubmatch(msg); m != nil {
		name := strings.TrimPrefix(m[2], "-") // --x is reported as -x too
		if strings.HasPrefix(m[1], "flag provided but not defined") {
			msg = "unknown flag --" + name
			var names []string
			fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
			if s := config.Suggest(name, append(names, "help")); s != "" {
				msg += fmt.Sprintf("; did you mean --%s?", s)
			}
		} else {
			msg = m[1] + "--" + name + m[3]
		}
	}
	return usageErrorf("%s (run 'redrive %s --help')", msg, cmd)
}
