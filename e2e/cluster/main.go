// Command cluster starts and stops the local three-node RabbitMQ cluster of
// the faults suite by hand (make cluster-up, make cluster-down):
//
//	go run ./e2e/cluster up     # prints the nodes' AMQP URLs
//	go run ./e2e/cluster down
//
// The cluster keeps running after up returns; the faults suite replaces it
// with a fresh one of its own. It needs root (the nodes run as the
// rabbitmq user). See package internal/testsupport/rabbitcluster.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/redrive/redrive/internal/testsupport/rabbitcluster"
)

func main() {
	if len(os.Args) != 2 || (os.Args[1] != "up" && os.Args[1] != "down") {
		fmt.Fprintln(os.Stderr, "usage: go run ./e2e/cluster up|down")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cfg := rabbitcluster.Config{Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	if err := run(ctx, os.Args[1], cfg); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cmd string, cfg rabbitcluster.Config) error {
	if cmd == "down" {
		n, err := rabbitcluster.Down(cfg)
		if err == nil {
			fmt.Printf("cluster down (%d processes stopped)\n", n)
		}
		return err
	}
	c, err := rabbitcluster.Start(ctx, cfg)
	if err != nil {
		return err
	}
	// Leave the nodes running: only the lock goes with this process.
	fmt.Printf("cluster up in %s: %d nodes\n", c.StartUp.Round(100*time.Millisecond), len(c.Nodes))
	for _, n := range c.Nodes {
		fmt.Printf("  %-16s %s (distribution port %d)\n", n.Name, n.URL(), n.DistPort)
	}
	fmt.Printf("rabbitmq.urls: [%s]\n", strings.Join(quote(c.URLs()), ", "))
	return nil
}

func quote(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
