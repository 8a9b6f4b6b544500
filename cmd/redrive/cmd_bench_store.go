package main

import (
	"bytes"
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"log/slog"
	"os"

	"github.com/redrive/redrive/internal/tools/bench"
)

func newBenchStoreCmd() *cobra.Command {
	var cfg bench.StoreConfig
	var out string
	var verbose bool
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Measure the PostgreSQL DLQ store at size: batch ingest vs raw COPY, page, count and by-id reads",
		Long: `Fills a fresh schema with --entries dead letters (five DLQs of both brokers
and every severity, four error classes, JSON payloads of 256 B-4 KiB
averaging about 1 KiB, arrivals spread over a month) through the store's
batch insert, copies the first --copy-entries of the same rows into a
second fresh schema with a raw COPY (the reference), gives the entries a
mix of statuses (30 % replayed, 5 % discarded), then prints the ingest rate
beside COPY's (ratio, target 0.5), p50/p99 of each operator-facing read
(pages first, deep by keyset, newest first, by time, by error class, by
text, by failure group; counts; summaries; failure groups; the arrivals
charts; an entry by id) with the targets of issue 22, the table's and its
indexes' size on disk, and the process's resident memory before and
during the reads. Every read's result is checked.
Both schemas are dropped at the end, also on failure, unless --keep
(the store's schema stays, for --reuse SCHEMA: the reads again, on the
same entries, without the hour-long fill at 10 M).

PostgreSQL is $DATABASE_URL (default ` + bench.DefaultDatabaseURL + `).
Disk: about 2.5 GB per million entries while it runs. --config is not
read.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return benchStore(cmd.Context(), newInvocation(cmd, args), cfg, out, verbose)
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&cfg.Entries, "entries", bench.DefaultStoreEntries, "`N` entries to store (at least 1000)")
	fs.IntVar(&cfg.Batch, "batch", bench.DefaultStoreBatch, "entries per batch insert (`N`)")
	fs.IntVar(&cfg.CopyEntries, "copy-entries", bench.DefaultStoreCopyEntries, "`N` rows of the raw COPY reference (at most --entries)")
	fs.IntVar(&cfg.Samples, "samples", bench.DefaultStoreSamples, "`N` timings of each read")
	fs.BoolVar(&cfg.Keep, "keep", false, "keep the filled store's schema for --reuse (it is named in the output)")
	fs.StringVar(&cfg.Reuse, "reuse", "", "time the reads on the kept `SCHEMA` of an earlier --keep run; store nothing")
	fs.StringVar(&out, "out", "", "also write the tables to `FILE`")
	fs.BoolVar(&verbose, "verbose", false, "log progress to stderr")
	return cmd
}

// benchStore runs redrive bench store.
func benchStore(ctx context.Context, inv *invocation, cfg bench.StoreConfig, out string, verbose bool) error {
	cfg.DatabaseURL = os.Getenv("DATABASE_URL")
	level := slog.LevelError
	if verbose {
		level = slog.LevelInfo
	}
	cfg.Logger = slog.New(slog.NewTextHandler(inv.stderr, &slog.HandlerOptions{Level: level}))
	if err := cfg.WithDefaults().Validate(); err != nil {
		return badInput(err)
	}
	rep, err := bench.RunStore(ctx, cfg)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := rep.Markdown(&buf); err != nil {
		return err
	}
	if _, err := inv.stdout.Write(buf.Bytes()); err != nil {
		return err
	}
	if out != "" {
		if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	return nil
}
