package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/retrypolicy"
)

func newPublishCmd() *cobra.Command {
	var p publishFlags
	cmd := &cobra.Command{
		Use:   "publish",
		Short: "Publish one message to a topic (body from --data or stdin)",
		Long: `Publishes one message to every group of --topic and waits for the broker's
confirmation. The body is --data, or standard input when --data is not
given. --delay delivers it no earlier than that from now. Prints the
message id.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return publish(cmd.Context(), newInvocation(cmd, args), p, cmd.InOrStdin())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&p.topic, "topic", "", "`TOPIC` to publish to (required)")
	fs.StringVar(&p.key, "key", "", "message `KEY` (Kafka partition key)")
	fs.StringVar(&p.id, "id", "", "message `ID` (generated when empty)")
	fs.Func("header", "header `k=v` (repeatable)", p.addHeader)
	fs.StringVar(&p.delay, "delay", "", "deliver after `DURATION` (e.g. 30s, 5m)")
	fs.Func("data", "message body `TEXT` (default: read standard input)", func(s string) error {
		p.data, p.hasData = s, true
		return nil
	})
	_ = cmd.RegisterFlagCompletionFunc("topic", completeTopic)
	return cmd
}

type publishFlags struct {
	topic, key, id, delay string
	headers               map[string]string
	data                  string
	hasData               bool
}

func (p *publishFlags) addHeader(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("header %q is not k=v", s)
	}
	if p.headers == nil {
		p.headers = map[string]string{}
	}
	p.headers[k] = v
	return nil
}

func publish(ctx context.Context, inv *invocation, p publishFlags, stdin io.Reader) error {
	if p.topic == "" {
		return usageErrorf("--topic is required")
	}
	var delay time.Duration
	if p.delay != "" {
		d, err := retrypolicy.ParseDuration(p.delay)
		if err != nil || d < 0 {
			return usageErrorf("--delay %q is not a duration", p.delay)
		}
		delay = d
	}
	body := []byte(p.data)
	if !p.hasData {
		b, err := io.ReadAll(io.LimitReader(stdin, 256<<20))
		if err != nil {
			return fmt.Errorf("read message body from stdin: %w", err)
		}
		body = b
	}
	c, err := inv.loadConfig()
	if err != nil {
		return err
	}
	b, err := openBroker(ctx, c)
	if err != nil {
		return err
	}
	defer b.Close()
	m := broker.Message{ID: p.id, Value: body, Headers: p.headers}
	if m.ID == "" {
		m.ID = broker.NewMessageID()
	}
	if p.key != "" {
		m.Key = []byte(p.key)
	}
	if delay > 0 {
		err = b.PublishDelayed(ctx, p.topic, delay, m)
	} else {
		err = b.Publish(ctx, p.topic, m)
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(inv.stdout, m.ID)
	return nil
}
