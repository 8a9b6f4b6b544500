package rabbit

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
)

// The manifest is the record of what `redrive topology apply` declared
// under a prefix, kept on the broker itself because AMQP cannot list
// queues or exchanges: one message in the queue Names.Manifest
// (x-max-length 1, so that a new record replaces the old one), a JSON
// list of the exchanges, queues and exchange-to-exchange bindings apply
// declared (queue bindings go with their queues). Apply adds to it,
// Remove takes away what it deleted, and Unnamed compares it with a
// configuration: what was applied and is no longer named. Two applies at
// once may lose one's additions (the last record wins): the record is an
// aid to cleaning up, never a reason to delete anything not looked up.

// Manifest names the queue of the topology record of the prefix.
func (n Names) Manifest() string { return n.Prefix + ".topology" }

// maxManifest bounds the record read back: anyone may publish to the
// queue.
const maxManifest = 4 << 20

// manifest is the record's JSON.
type manifest struct {
	Objects []manifestObject `json:"objects"`
}

// manifestObject is one recorded declaration.
type manifestObject struct {
	Kind     string `json:"kind"`
	Name     string `json:"name"`
	Exchange string `json:"exchange,omitempty"`
	Key      string `json:"key,omitempty"`
}

func objectOf(d Declaration) manifestObject {
	return manifestObject{Kind: d.Kind, Name: d.Name, Exchange: d.Exchange, Key: d.Key}
}

// manifestArgs are the record queue's arguments: the queue type's, one
// message at most.
func (b *Broker) manifestArgs() amqp.Table {
	a := queueArgs(b.cfg.QueueType)
	a["x-max-length"] = int64(1)
	return a
}

// readManifest takes the record off its queue unacknowledged (the caller
// acks or nacks m; m is nil when there is none) and decodes it. A record
// that does not decode is reported as err with m set, so that the caller
// can replace it.
func (b *Broker) readManifest(ch *amqp.Channel) (manifest, *amqp.Delivery, error) {
	m, ok, err := ch.Get(b.names.Manifest(), false)
	if err != nil {
		return manifest{}, nil, fmt.Errorf("rabbit: read topology record %s: %w", b.names.Manifest(), err)
	}
	if !ok {
		return manifest{}, nil, nil
	}
	var mf manifest
	if len(m.Body) > maxManifest {
		return manifest{}, &m, fmt.Errorf("rabbit: topology record %s is %d bytes, over %d", b.names.Manifest(), len(m.Body), maxManifest)
	}
	if err := json.Unmarshal(m.Body, &mf); err != nil {
		return manifest{}, &m, fmt.Errorf("rabbit: topology record %s: %w", b.names.Manifest(), err)
	}
	return mf, &m, nil
}

// updateManifest replaces the record with change(old): the new record is
// published and confirmed before the old one is acked, so that a failure
// leaves the old one.
func (b *Broker) updateManifest(conn *amqp.Connection, change func([]manifestObject) []manifestObject) error {
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("rabbit: open topology channel: %w", err)
	}
	defer func() { _ = ch.Close() }()
	if _, err := ch.QueueDeclare(b.names.Manifest(), true, false, false, false, b.manifestArgs()); err != nil {
		return fmt.Errorf("rabbit: declare topology record %s: %w", b.names.Manifest(), err)
	}
	old, m, err := b.readManifest(ch)
	if err != nil && m == nil {
		return err
	}
	if err != nil {
		b.log.Warn("rabbit: topology record unreadable; replaced", "error", err)
	}
	body, err := json.Marshal(manifest{Objects: change(old.Objects)})
	if err != nil {
		return fmt.Errorf("rabbit: encode topology record: %w", err)
	}
	if err := ch.Confirm(false); err != nil {
		return fmt.Errorf("rabbit: confirm mode: %w", err)
	}
	conf, err := ch.PublishWithDeferredConfirm("", b.names.Manifest(), true, false,
		amqp.Publishing{ContentType: "application/json", DeliveryMode: amqp.Persistent, Body: body})
	if err != nil {
		return fmt.Errorf("rabbit: write topology record: %w", err)
	}
	if !conf.Wait() {
		return fmt.Errorf("rabbit: write topology record %s: not confirmed", b.names.Manifest())
	}
	if m != nil {
		if err := m.Ack(false); err != nil {
			return fmt.Errorf("rabbit: replace topology record: %w", err)
		}
	}
	return nil
}

// recordApplied adds plan's exchanges, queues and exchange-to-exchange
// bindings to the record.
func (b *Broker) recordApplied(conn *amqp.Connection, plan []Declaration) error {
	return b.updateManifest(conn, func(old []manifestObject) []manifestObject {
		for _, d := range plan {
			if o := objectOf(d); d.Kind != "binding" && !slices.Contains(old, o) {
				old = append(old, o)
			}
		}
		return old
	})
}

// recordRemoved takes the removals that are gone (deleted or absent) out
// of the record; with all (nothing of the prefix is left), the record's
// queue goes.
func (b *Broker) recordRemoved(conn *amqp.Connection, rs []Removal, all bool) error {
	if all {
		ch, err := conn.Channel()
		if err != nil {
			return fmt.Errorf("rabbit: open topology channel: %w", err)
		}
		defer func() { _ = ch.Close() }()
		if _, err := ch.QueueDelete(b.names.Manifest(), false, false, false); err != nil && !absent(err) {
			return fmt.Errorf("rabbit: delete topology record %s: %w", b.names.Manifest(), err)
		}
		return nil
	}
	return b.updateManifest(conn, func(old []manifestObject) []manifestObject {
		return slices.DeleteFunc(old, func(o manifestObject) bool {
			return slices.ContainsFunc(rs, func(r Removal) bool {
				return objectOf(r.Declaration) == o && (r.Action == ActionDeleted || r.Action == ActionAbsent)
			})
		})
	})
}

// Unnamed looks up what the record of cfg's prefix holds and the plan of
// cfg and subs does not name: the topology of retired workers, of delay
// settings since changed, or of another configuration sharing the prefix.
// Each is returned as a dry run of its removal (absent, delete with its
// counts, or refused). It changes nothing; no record, no removals.
func Unnamed(ctx context.Context, cfg Config, subs ...broker.Subscription) ([]Removal, error) {
	b, err := dialing(cfg)
	if err != nil {
		return nil, err
	}
	conn, err := b.dial(ctx, "topology-record")
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	rs, err := b.unnamed(conn, subs)
	if err != nil {
		return nil, err
	}
	_, err = b.removeAll(ctx, conn, rs, RemoveRequest{DryRun: true})
	return rs, err
}

// unnamed returns the recorded objects the plan of subs does not name.
func (b *Broker) unnamed(conn *amqp.Connection, subs []broker.Subscription) ([]Removal, error) {
	ch, err := conn.Channel()
	if err != nil {
		return nil, fmt.Errorf("rabbit: open topology channel: %w", err)
	}
	defer func() { _ = ch.Close() }()
	if _, err := ch.QueueDeclarePassive(b.names.Manifest(), true, false, false, false, nil); absent(err) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("rabbit: look up topology record %s: %w", b.names.Manifest(), err)
	}
	mf, m, err := b.readManifest(ch)
	if m != nil {
		_ = m.Nack(false, true)
	}
	if err != nil {
		return nil, err
	}
	named := map[manifestObject]bool{}
	for _, d := range b.Plan(normalized(subs)...) {
		named[objectOf(d)] = true
	}
	shared := map[manifestObject]bool{}
	for _, d := range b.basePlan() {
		shared[objectOf(d)] = true
	}
	var out []Removal
	for _, o := range mf.Objects {
		if named[o] || !slices.Contains([]string{"queue", "exchange", "exchange-binding"}, o.Kind) {
			continue
		}
		named[o] = true // once
		out = append(out, Removal{Declaration: Declaration{Kind: o.Kind, Name: o.Name, Exchange: o.Exchange, Key: o.Key}, Shared: shared[o]})
	}
	return out, nil
}
