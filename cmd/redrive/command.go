package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// command is one subcommand. Each lives in its own file (cmd_*.go) and
// registers itself from init with register.
type command struct {
	// name is one or two words: "version", "config check".
	name string
	// summary is the one line shown in the command list.
	summary string
	// args is the synopsis of positional arguments ("[command]"); empty when
	// the command takes none, and then any is bad input.
	args string
	// help is an optional longer description for --help.
	help string
	// flags registers the command's own flags on fs (--config and --help are
	// already there) and returns the action run after parsing.
	flags func(fs *flag.FlagSet) action
}

// action runs a command whose flags are parsed.
type action func(ctx context.Context, inv *invocation) error

// invocation is what an action gets.
type invocation struct {
	name       string    // the command's name
	stdout     io.Writer // for results
	stderr     io.Writer // for diagnostics
	configPath string    // --config
	args       []string  // positional arguments
}

// registry holds the commands by name.
var registry = map[string]*command{}

// register adds c to the registry. It panics on a duplicate name: two files
// registering the same command is a programming error.
func register(c *command) {
	if _, dup := registry[c.name]; dup {
		panic("redrive: command registered twice: " + c.name)
	}
	registry[c.name] = c
}

// defaultConfigFile is the --config default when $REDRIVE_CONFIG is unset.
const defaultConfigFile = "configs/redrive.yaml"

// defaultConfigPath returns $REDRIVE_CONFIG, else defaultConfigFile.
func defaultConfigPath() string {
	if p := os.Getenv("REDRIVE_CONFIG"); p != "" {
		return p
	}
	return defaultConfigFile
}

// lookup finds the command named by the first one or two words of args and
// returns it with the remaining arguments. For a group word followed by
// --help ("redrive config --help") it returns a nil command and no error.
func lookup(args []string) (*command, []string, error) {
	if len(args) >= 2 {
		if c, ok := registry[args[0]+" "+args[1]]; ok {
			return c, args[2:], nil
		}
	}
	if c, ok := registry[args[0]]; ok {
		return c, args[1:], nil
	}
	if sub := groupCommands(args[0]); len(sub) > 0 {
		switch {
		case len(args) == 1:
			return nil, nil, usageErrorf("%s: missing subcommand (%s)", args[0], strings.Join(sub, ", "))
		case isHelpFlag(args[1]):
			return nil, nil, nil
		}
		return nil, nil, usageErrorf("unknown command %q (%s)", args[0]+" "+args[1], strings.Join(sub, ", "))
	}
	return nil, nil, usageErrorf("unknown command %q (run 'redrive help')", args[0])
}

// groupCommands lists the commands whose first word is word, sorted.
func groupCommands(word string) []string {
	var out []string
	for name := range registry {
		if strings.HasPrefix(name, word+" ") {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// isHelpFlag reports whether arg asks for help.
func isHelpFlag(arg string) bool {
	return arg == "-h" || arg == "--help" || arg == "-help"
}

// newFlagSet returns the flag set of cmd with the common flags, its action
// and the --config value.
func newFlagSet(cmd *command) (*flag.FlagSet, action, *string) {
	fs := flag.NewFlagSet("redrive "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	configPath := fs.String("config", defaultConfigPath(), "configuration `FILE` (default $REDRIVE_CONFIG, else "+defaultConfigFile+")")
	return fs, cmd.flags(fs), configPath
}

// execute parses cmd's flags and runs it.
func execute(ctx context.Context, cmd *command, args []string, stdout, stderr io.Writer) int {
	fs, act, configPath := newFlagSet(cmd)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printCommandUsage(stdout, cmd, fs)
			return exitOK
		}
		printError(stderr, cmd.name, flagError(fs, cmd.name, err))
		return exitUsage
	}
	if cmd.args == "" && fs.NArg() > 0 {
		printError(stderr, cmd.name, fmt.Errorf("unexpected argument %q", fs.Arg(0)))
		return exitUsage
	}
	inv := &invocation{name: cmd.name, stdout: stdout, stderr: stderr, configPath: *configPath, args: fs.Args()}
	if err := act(ctx, inv); err != nil {
		printError(stderr, cmd.name, err)
		return exitCode(err)
	}
	return exitOK
}
