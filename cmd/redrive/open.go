package main

import (
	"context"
	"io"
	"log/slog"
	"os"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/internal/assembly"
	"github.com/redrive/redrive/internal/assembly/config"
)

// logger is the CLI's logger: warnings and errors on stderr.
func logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// daemonLogger is the logger of the long-running commands (serve,
// exporter): info and above, as text, on w.
func daemonLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// openBroker connects the broker the configuration names.
func openBroker(ctx context.Context, c *config.Config) (broker.Broker, error) {
	return assembly.Open(ctx, c, logger())
}
