package rabbit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

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
	Objects []recorded `json:"objects"`
}

// recorded is one recorded declaration with, for a queue, the arguments
// it was declared with (strings and integers): what tells a queue of
// redrive's from another one the record might name.
type recorded struct {
	manifestObject
	Args map[string]any `json:"args,omitempty"`
}

// manifestObject is what identifies a recorded declaration.
type manifestObject struct {
	Kind     string `json:"kind"`
	Name     string `json:"name"`
	Exchange string `json:"exchange,omitempty"`
	Key      string `json:"key,omitempty"`
}

func objectOf(d Declaration) manifestObject {
	return manifestObject{Kind: d.Kind, Name: d.Name, Exchange: d.Exchange, Key: d.Key}
}

func recordOf(d Declaration) recorded {
	r := recorded{manifestObject: objectOf(d)}
	if d.Kind == "queue" && len(d.Args) > 0 {
		r.Args = map[string]any(d.Args)
	}
	return r
}

// table returns r's arguments as declared: integers as int64 (JSON
// numbers decoded with UseNumber), strings as they are; false when any
// other value makes them no arguments redrive declares.
func (r recorded) table() (amqp.Table, bool) {
	t := amqp.Table{}
	for k, v := range r.Args {
		switch v := v.(type) {
		case string:
			t[k] = v
		case json.Number:
			n, err := v.Int64()
			if err != nil {
				return nil, false
			}
			t[k] = n
		case int64:
			t[k] = v
		default:
			return nil, false
		}
	}
	return t, true
}

// manifestArgs are the record queue's arguments on the server of conn:
// the queue type's (no delivery limit: reading the record hands it back),
// one message at most.
func (b *Broker) manifestArgs(conn *amqp.Connection) amqp.Table {
	a := queueArgs(b.cfg.QueueType)
	a["x-max-length"] = int64(1)
	return forServer([]Declaration{{Kind: "queue", Args: a}}, conn)[0].Args
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
		return manifest{}, &m, fmt.Errorf("%w: %s is %d bytes, over %d", ErrBadRecord, b.names.Manifest(), len(m.Body), maxManifest)
	}
	dec := json.NewDecoder(bytes.NewReader(m.Body))
	dec.UseNumber()
	if err := dec.Decode(&mf); err != nil {
		return manifest{}, &m, fmt.Errorf("%w: %s: %v", ErrBadRecord, b.names.Manifest(), err)
	}
	return mf, &m, nil
}

// ErrBadRecord is wrapped when the prefix's topology record does not
// decode (anyone may publish to its queue): `topology apply` replaces it.
var ErrBadRecord = errors.New("rabbit: topology record unreadable")

// updateManifest replaces the record with change(old): the new record is
// published and confirmed before the old one is acked, so that a failure
// leaves the old one.
func (b *Broker) updateManifest(conn *amqp.Connection, change func([]recorded) []recorded) error {
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("rabbit: open topology channel: %w", err)
	}
	defer func() { _ = ch.Close() }()
	if _, err := ch.QueueDeclare(b.names.Manifest(), true, false, false, false, b.manifestArgs(conn)); err != nil {
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

// recordApplied adds plan's exchanges, queues (with their arguments) and
// exchange-to-exchange bindings to the record, replacing what it held of
// them.
func (b *Broker) recordApplied(conn *amqp.Connection, plan []Declaration) error {
	return b.updateManifest(conn, func(old []recorded) []recorded {
		for _, d := range plan {
			if d.Kind == "binding" {
				continue
			}
			r := recordOf(d)
			if i := slices.IndexFunc(old, func(o recorded) bool { return o.manifestObject == r.manifestObject }); i >= 0 {
				old[i] = r
			} else {
				old = append(old, r)
			}
		}
		return old
	})
}

// recordRemoved takes the removals that are gone (deleted or absent) out
// of the record. When nothing is left in it and the prefix's shared
// objects went too (nothing of the prefix is left), the record's queue
// goes.
func (b *Broker) recordRemoved(conn *amqp.Connection, rs []Removal, shared bool) error {
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("rabbit: open topology channel: %w", err)
	}
	defer func() { _ = ch.Close() }()
	if _, err := ch.QueueDeclarePassive(b.names.Manifest(), true, false, false, false, nil); absent(err) {
		return nil // nothing was recorded: nothing to take out
	} else if err != nil {
		return fmt.Errorf("rabbit: look up topology record %s: %w", b.names.Manifest(), err)
	}
	empty := false
	err = b.updateManifest(conn, func(old []recorded) []recorded {
		left := slices.DeleteFunc(old, func(o recorded) bool {
			return slices.ContainsFunc(rs, func(r Removal) bool {
				return objectOf(r.Declaration) == o.manifestObject && (r.Action == ActionDeleted || r.Action == ActionAbsent)
			})
		})
		empty = len(left) == 0
		return left
	})
	if err != nil || !empty || !shared {
		return err
	}
	if _, err := ch.QueueDelete(b.names.Manifest(), false, false, false); err != nil {
		return fmt.Errorf("rabbit: delete topology record %s: %w", b.names.Manifest(), err)
	}
	return nil
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

// unnamed returns the recorded objects the plan of subs does not name and
// that are redrive's under this prefix (ours): the record is a message
// anyone may publish, so it never decides alone what may be deleted.
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
	byName := map[string]recorded{}
	for _, o := range mf.Objects {
		if o.Kind == "queue" {
			byName[o.Name] = o
		}
	}
	var out []Removal
	ignored := 0
	for _, o := range mf.Objects {
		if named[o.manifestObject] {
			continue
		}
		named[o.manifestObject] = true // once
		ok, err := b.ours(conn, o, byName)
		if err != nil {
			return nil, err
		}
		if !ok {
			ignored++
			continue
		}
		out = append(out, Removal{Declaration: Declaration{Kind: o.Kind, Name: o.Name, Exchange: o.Exchange, Key: o.Key}, Shared: shared[o.manifestObject]})
	}
	if ignored > 0 {
		b.log.Warn("rabbit: topology record names objects that are not redrive's under this prefix; ignored",
			"record", b.names.Manifest(), "ignored", ignored)
	}
	return out, nil
}

// ours reports whether a recorded object is one redrive declares under
// this prefix: an exchange, or an exchange-to-exchange binding, named
// "<prefix>.…"; a queue named so (delay, route and unroutable queues); a
// group queue Q that exists with the recorded arguments (an equivalent
// re-declaration), dead-lettering to <prefix>.dlx with its own name as the
// key; or Q's dead-letter queue "Q.dlq" with its recorded arguments, Q
// being such a group queue. A queue that no longer exists is ours to
// forget (nothing is deleted).
func (b *Broker) ours(conn *amqp.Connection, o recorded, byName map[string]recorded) (bool, error) {
	inPrefix := func(n string) bool { return strings.HasPrefix(n, b.names.Prefix+".") }
	switch o.Kind {
	case "exchange":
		return inPrefix(o.Name), nil
	case "exchange-binding":
		return inPrefix(o.Name) && inPrefix(o.Exchange), nil
	case "queue":
	default:
		return false, nil
	}
	if inPrefix(o.Name) {
		return true, nil
	}
	group := o
	if q, ok := strings.CutSuffix(o.Name, ".dlq"); ok {
		if group, ok = byName[q]; !ok {
			return false, nil
		}
	}
	ga, ok := group.table()
	if !ok || ga["x-dead-letter-exchange"] != b.names.DLX() || ga["x-dead-letter-routing-key"] != group.Name {
		return false, nil
	}
	for _, q := range []recorded{group, o} {
		args, ok := q.table()
		if !ok {
			return false, nil
		}
		if same, err := b.declaredAs(conn, q.Name, args); err != nil || !same {
			return same, err
		}
	}
	return true, nil
}

// declaredAs reports whether queue name is absent or exists with args:
// looked up passively, then declared again with args, which RabbitMQ
// refuses when they are not equivalent (each on a channel of its own).
func (b *Broker) declaredAs(conn *amqp.Connection, name string, args amqp.Table) (bool, error) {
	for _, passive := range []bool{true, false} {
		ch, err := conn.Channel()
		if err != nil {
			return false, fmt.Errorf("rabbit: open topology channel: %w", err)
		}
		if passive {
			_, err = ch.QueueDeclarePassive(name, true, false, false, false, nil)
		} else {
			_, err = ch.QueueDeclare(name, true, false, false, false, args)
		}
		_ = ch.Close()
		var ae *amqp.Error
		switch {
		case passive && absent(err):
			return true, nil
		case !passive && errors.As(err, &ae) && ae.Code == amqp.PreconditionFailed:
			return false, nil
		case err != nil:
			return false, fmt.Errorf("rabbit: look up queue %q: %w", name, err)
		}
	}
	return true, nil
}
