package assembly_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/assembly"
	"github.com/redrive/redrive/internal/assembly/config"
)

func TestRabbitCheckNames(t *testing.T) {
	name := func(n int) string { return strings.Repeat("n", n) }
	// A group queue "t.<name>" of 245 bytes: its DLQ (249) fits, but in
	// route mode its binding key is 2 × 8 levels = 16 bytes longer.
	long := name(243)
	for _, tc := range []struct {
		name string
		doc  string
		want []string
	}{
		{"fine", "workers: [{name: b, topic: a.x}, {name: c, topic: a}, {name: d, topic: a.x}]", nil},
		{"two workers, one queue", "workers: [{name: b, topic: a.x}, {name: x.b, topic: a}]",
			[]string{`workers[1].name: its group queue "a.x.b" is also the group queue of workers[0] (topic "a.x", name "b"): rename one of the workers`}},
		{"a group queue that is a dead-letter queue", "workers: [{name: b, topic: a}, {name: b.dlq, topic: a}]",
			[]string{`workers[1].name: its group queue "a.b.dlq" is also the dead-letter queue of workers[0] (topic "a", name "b"): rename one of the workers`}},
		{"a worker queue that is a shared queue", "workers: [{name: unroutable, topic: redrive}]",
			[]string{`workers[0].name: its group queue "redrive.unroutable" is also a queue of the shared topology (rabbitmq.prefix redrive): rename one of the workers`}},
		{"route mode: the binding key is too long", "workers: [{name: " + long + ", topic: t}]",
			[]string{`workers[0].name: the binding key "` + driver.ClipName("*.*.*.*.*.*.*.*.t."+long) + `" of ` + driver.ClipName("t."+long) +
				` on redrive.route.final is 261 bytes, over RabbitMQ's 255 (shorten the topic or the name, or lower rabbitmq.delay.levels)`}},
		{"a foreign DLQ that is a worker's queue", "rabbitmq: {foreign_dlqs: [{queue: attune.dlx.queue, replay_to: {exchange: e}}, {queue: a.b.dlq, replay_to: {exchange: e}}, {queue: a.b, replay_to: {exchange: e}}]}\nworkers: [{name: b, topic: a}]",
			[]string{`rabbitmq.foreign_dlqs[1].queue: "a.b.dlq" is the dead-letter queue of workers[0] (topic "a", name "b"): the keeper would take its messages (name another application's dead-letter queue)`,
				`rabbitmq.foreign_dlqs[2].queue: "a.b" is the group queue of workers[0] (topic "a", name "b"): the keeper would take its messages (name another application's dead-letter queue)`}},
		{"hops mode has no such key", "rabbitmq: {delay: {mode: hops}}\nworkers: [{name: " + long + ", topic: t}]", nil},
		{"route mode with fewer levels", "rabbitmq: {delay: {levels: 5}}\nworkers: [{name: " + long + ", topic: t, retry: {backoff: 1s}}]", nil},
		{"dead-letter queue too long", "rabbitmq: {delay: {mode: hops}}\nworkers: [{name: " + name(241) + ", topic: tttttttttt}]",
			[]string{`workers[0].name: queue name "` + driver.ClipName("tttttttttt."+name(241)+".dlq") + `" is 256 bytes, over RabbitMQ's 255 (shorten the topic or the name)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Parse([]byte("broker: rabbitmq\n" + tc.doc))
			if err != nil {
				t.Fatalf("the configuration itself is invalid: %v", err)
			}
			var got []string
			if err := assembly.Check(c); err != nil {
				got = strings.Split(err.Error(), "\n")
				if !errors.Is(err, config.ErrInvalid) {
					t.Errorf("assembly.Check = %v, not a config.ErrInvalid", err)
				}
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("problems:\n got: %q\nwant: %q", got, tc.want)
			}
		})
	}
	// Every name the plan declares was checked: the longest legal
	// configuration declares nothing over the limit.
	c, err := config.Parse([]byte("broker: rabbitmq\nrabbitmq: {delay: {levels: 5}}\nworkers: [{name: " + long + ", topic: t, retry: {backoff: 1s}}]"))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := assembly.RabbitConfig(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := rabbit.Plan(rabbit.Config{Prefix: rc.Prefix, Delay: rc.Delay}, c.Subscriptions()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range plan {
		if len(d.Name) > rabbit.MaxNameLen || len(d.Key) > rabbit.MaxNameLen || len(d.Exchange) > rabbit.MaxNameLen {
			t.Errorf("declaration %s over the limit passed the check", d)
		}
	}
}
