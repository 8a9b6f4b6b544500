package rabbit_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// The topology record is a message anyone may publish to its queue: a
// record that does not decode is reported (ErrBadRecord) and replaced by
// the next apply, and a record naming queues or exchanges that are not
// redrive's under the prefix never gets them offered for deletion, let
// alone deleted. What apply recorded itself is: a worker dropped from the
// configuration shows as unnamed and is removed.
func TestTopologyRecordFromAnyone(t *testing.T) {
	for _, qt := range []string{rabbit.Classic, rabbit.Quorum} {
		t.Run(qt, func(t *testing.T) { testRecordFromAnyone(t, qt) })
	}
}

func testRecordFromAnyone(t *testing.T, queueType string) {
	id := broker.NewMessageID()[:6]
	billing, shipping := sub("rec.billing."+id), sub("rec.shipping."+id)
	billing.Group, shipping.Group = "billing", "shipping"
	var cfg rabbit.Config
	newBroker(t, func(c *rabbit.Config) { c.QueueType = queueType; cfg = *c }, billing, shipping)
	t.Cleanup(func() { testenv.DeleteQueues(cfg.Prefix + ".topology") })
	if err := rabbit.Apply(t.Context(), cfg, billing, shipping); err != nil {
		t.Fatal(err)
	}
	bq := rabbit.Queue(billing.Topic, billing.Group)
	unnamed := func() ([]string, error) {
		t.Helper()
		rs, err := rabbit.Unnamed(t.Context(), cfg, shipping)
		var names []string
		for _, r := range rs {
			names = append(names, r.Kind+" "+r.Name)
		}
		return names, err
	}
	if names, err := unnamed(); err != nil || !slices.Contains(names, "queue "+bq) || !slices.Contains(names, "queue "+rabbit.DLQ(bq)) {
		t.Fatalf("unnamed after applying billing and shipping, configured shipping: %v, %v; want billing's queues", names, err)
	}

	victim := "rec-victim-" + id
	ch := channel(t)
	if _, err := ch.QueueDeclare(victim, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testenv.DeleteQueues(victim) })
	record := cfg.Prefix + ".topology"
	for _, tt := range []struct {
		name string
		body string
		bad  bool // ErrBadRecord
	}{
		{"not JSON", "not a record", true},
		{"deeply nested", strings.Repeat("[", 100_000), true},
		{"over 4 MiB", `{"objects":[],"pad":"` + strings.Repeat("x", 5<<20) + `"}`, true},
		{"a foreign queue", fmt.Sprintf(`{"objects":[{"kind":"queue","name":%q}]}`, victim), false},
		{"a foreign queue claiming redrive's arguments", fmt.Sprintf(`{"objects":[{"kind":"queue","name":%q,"args":{"x-dead-letter-exchange":%q,"x-dead-letter-routing-key":%q}}]}`,
			victim, cfg.Prefix+".dlx", victim), false},
		{"its dead-letter queue", fmt.Sprintf(`{"objects":[{"kind":"queue","name":%q}]}`, rabbit.DLQ(victim)), false},
		{"a broker exchange", `{"objects":[{"kind":"exchange","name":"amq.topic"},{"kind":"exchange-binding","name":"amq.direct","exchange":"amq.topic","key":"#"}]}`, false},
		{"arguments of other types", fmt.Sprintf(`{"objects":[{"kind":"queue","name":%q,"args":{"x-dead-letter-exchange":{"nested":[true]}}}]}`, victim), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			publishConfirmed(t, channel(t), "", record, amqp.Publishing{Body: []byte(tt.body)})
			names, err := unnamed()
			if tt.bad {
				if !errors.Is(err, rabbit.ErrBadRecord) {
					t.Errorf("Unnamed = %v, %v; want ErrBadRecord", names, err)
				}
				return
			}
			if err != nil || len(names) != 0 {
				t.Errorf("Unnamed = %v, %v; want nothing (not redrive's)", names, err)
			}
			rs, err := rabbit.Remove(t.Context(), cfg, rabbit.RemoveRequest{Keep: []broker.Subscription{shipping}, Unnamed: true, Force: true})
			if err != nil || len(rs) != 0 {
				t.Errorf("Remove --unnamed --force = %v, %v; want nothing removed", rs, err)
			}
			if depth(t, channel(t), victim) != 0 {
				t.Error("victim changed")
			}
		})
	}
	// A new apply replaces whatever the queue held.
	if err := rabbit.Apply(t.Context(), cfg, billing, shipping); err != nil {
		t.Fatal(err)
	}
	if names, err := unnamed(); err != nil || !slices.Contains(names, "queue "+bq) {
		t.Errorf("unnamed after a new apply: %v, %v; want billing's queues", names, err)
	}
}
