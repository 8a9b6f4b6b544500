package console_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/dlq"
)

// An entry whose original message is unknown (stored raw) is marked in
// the listing and on its page; its replay is refused (409) unless the
// operator ticks "send the stored bytes as they are", and the audit row
// then says replay_as_stored.
func TestReplayUnknownMessage(t *testing.T) {
	f := newFixture(t, stores[0].Open(t), nil)
	raw := f.insert(1, func(_ int, r *dlq.Record) {
		r.Entry = dlq.Entry{OriginalPartition: -1, OriginalOffset: -1, OriginalValue: []byte("<not an envelope>"),
			Reason: string(dlq.ReasonUnparseable), ErrorMessage: "dlq: decode envelope: not a redrive dead-letter envelope: not a JSON object"}
	})[0]
	c := f.client().login(opToken)
	page := "/dlq/" + f.dlq + "/" + raw.ID
	expect(t, "listing", c.get("/dlq/"+f.dlq), http.StatusOK, "message unknown</span>")
	expect(t, "entry page", c.get(page), http.StatusOK, "Original message unknown:", `id="as-stored" required`,
		"Replay as stored to topic orders.retry.billing (worker billing)</button>", "&lt;not an envelope&gt;")

	expect(t, "replay without as_stored", c.post(page+"/replay", nil), http.StatusConflict, "replay refused: dlq: replay "+f.dlq+"/"+raw.ID+": the original message is unknown")
	expect(t, "replay with a bad as_stored", c.post(page+"/replay", url.Values{"as_stored": {"yes"}}), http.StatusBadRequest, "as_stored")
	if r, _ := f.store.Get(context.Background(), f.dlq, raw.ID); r.Status != dlq.StatusPending {
		t.Fatalf("refused replays left the entry %s", r.Status)
	}
	if r := c.post(page+"/replay", url.Values{"as_stored": {"on"}}); r.status != http.StatusSeeOther {
		t.Fatalf("replay as stored = %d: %s", r.status, clip(r.body))
	}
	expect(t, "replayed entry", c.get(page), http.StatusOK, "<td>replay_as_stored</td><td>replaying</td><td>replayed</td>")
	_, trail, err := f.ops.Show(context.Background(), f.dlq, raw.ID)
	if err != nil || len(trail) != 1 || trail[0].Action != dlq.ActionReplayAsStored || trail[0].Actor != "alice" {
		t.Errorf("audit %+v, %v; want one replay_as_stored by alice", trail, err)
	}
}

// A worker declared foreign replays to its topic: the entry page says
// every group of the topic receives it, on the button and beside it, and
// so does the audit row.
func TestReplayToEveryGroup(t *testing.T) {
	f := newFixtureRoutes(t, stores[0].Open(t), []dlq.Route{kafka.ForeignWorkerRoute(topic, group)}, nil)
	rec := f.insert(1, nil)[0]
	const dest = "topic orders (every consumer group of it, worker billing among them)"
	c := f.client().login(opToken)
	page := "/dlq/" + f.dlq + "/" + rec.ID
	expect(t, "entry page", c.get(page), http.StatusOK, `id="every-group"`, "Every group of the topic receives this replay",
		"Replay to "+dest+"</button>")
	if r := c.post(page+"/replay", nil); r.status != http.StatusSeeOther {
		t.Fatalf("replay = %d: %s", r.status, clip(r.body))
	}
	expect(t, "replayed entry", c.get(page), http.StatusOK, "<td>to "+dest+"</td>")
}
