// Command redrive is the redrive CLI and operations daemon: retries, delays
// and dead-letter queues over RabbitMQ and Kafka.
//
// Usage:
//
//	redrive <command> [flags]
//
// Every command takes --config FILE (default $REDRIVE_CONFIG, else
// configs/redrive.yaml) and --help; listings take --output table|json;
// 'redrive completion bash|zsh|fish' prints a shell completion script. Exit status: 0 on success, 1 on a
// runtime failure, 2 on bad input (usage or configuration).
//
// The command tree is github.com/spf13/cobra's (shell completion, flags
// anywhere on the line). This package only wires: configuration, decisions
// and I/O live in the library packages. Each command is built by a
// new*Cmd function in a file of its own (cmd_*.go); newRootCmd assembles
// them.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit statuses.
const (
	exitOK      = 0 // success
	exitFailure = 1 // runtime failure
	exitUsage   = 2 // bad input: usage or configuration
	// redrive workers: the worst severity when it is not OK.
	exitWarning  = 3
	exitCritical = 4
)

// run runs the command line args (without the program name) and returns
// the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr, newRootCmd())
		return exitUsage
	}
	return execute(ctx, newRootCmd(), args, stdout, stderr)
}
