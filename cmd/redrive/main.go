// Command redrive is the redrive CLI and operations daemon: retries, delays
// and dead-letter queues over RabbitMQ and Kafka.
//
// Usage:
//
//	redrive <command> [flags]
//
// Every command takes --config FILE (default $REDRIVE_CONFIG, else
// configs/redrive.yaml) and --help. Exit status: 0 on success, 1 on a
// runtime failure, 2 on bad input (usage or configuration).
//
// This package only wires: configuration, decisions and I/O live in the
// library packages. Each command is one file (cmd_*.go) that registers
// itself from init.
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
		printUsage(stderr)
		return exitUsage
	}
	if isHelpFlag(args[0]) {
		printUsage(stdout)
		return exitOK
	}
	cmd, rest, err := lookup(args)
	if err != nil {
		printError(stderr, "", err)
		return exitUsage
	}
	if cmd == nil { // "redrive config --help": the group's commands
		printGroupUsage(stdout, args[0])
		return exitOK
	}
	return execute(ctx, cmd, rest, stdout, stderr)
}
