package admin_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/redrive/redrive/dlq"
)

// testReplayUnknownMessage: an entry whose original message is unknown
// (stored raw, reason unparseable) is listed as such with where a replay
// as stored would go; a replay is refused with 409 unknown_message and
// leaves it pending, unsent; replay-all skips it; "as_stored": true sends
// its stored bytes and the audit row says replay_as_stored.
func testReplayUnknownMessage(t *testing.T, f *fixture) {
	recs := f.insert("ru.dlq", 2, func(i int, r *dlq.Record) {
		if i == 0 {
			r.Entry = dlq.Entry{OriginalPartition: -1, OriginalOffset: -1, OriginalValue: []byte(`{"not":"an envelope"}`),
				Reason: string(dlq.ReasonUnparseable), ErrorMessage: "dlq: decode envelope: not a redrive dead-letter envelope: no original_topic"}
		}
	})
	raw := recs[0].ID

	m := expect(t, f.do("GET", "/internal/v1/dlq/ru.dlq/"+raw, ""), http.StatusOK, "")
	if m["message_unknown"] != true || !strings.Contains(m["replay_refused"].(string), "unknown") ||
		m["replay_destination"] != "queue orders.billing (worker billing)" {
		t.Errorf("unknown entry shown as %v", m)
	}
	list := expect(t, f.do("GET", "/internal/v1/dlq/ru.dlq", ""), http.StatusOK, "")
	unknown := 0
	for _, e := range list["entries"].([]any) {
		if e.(map[string]any)["message_unknown"] == true {
			unknown++
		}
	}
	if unknown != 1 {
		t.Errorf("listing marks %d entries message_unknown, want 1", unknown)
	}

	body := `{"topic":"ru.dlq","id":"` + raw + `"}`
	m = expect(t, f.do("POST", "/internal/v1/dlq/replay", body), http.StatusConflict, "")
	if m["code"] != "unknown_message" || !strings.Contains(m["error"].(string), "as stored") {
		t.Errorf("replay of an unknown message = %v, want 409 unknown_message naming the way out", m)
	}
	expect(t, f.do("POST", "/internal/v1/dlq/replay", `{"topic":"ru.dlq","id":"`+raw+`","as_stored":"yes"}`), http.StatusBadRequest, "as_stored")
	if got, _ := f.store.Get(context.Background(), "ru.dlq", raw); got.Status != dlq.StatusPending || f.pub.count() != 0 {
		t.Fatalf("refused replay left the entry %s after %d republishes", got.Status, f.pub.count())
	}

	// Replay-all replays the known one, skips the unknown one.
	w := f.do("POST", "/internal/v1/dlq/replay-all?topic=ru.dlq&rate=0", "")
	expect(t, w, http.StatusAccepted, "")
	j := waitJob(t, f, w.Header().Get("Location"))
	if p := j["progress"].(map[string]any); j["state"] != "done" || p["replayed"] != 1.0 || p["mismatched"] != 1.0 {
		t.Errorf("replay-all job = %v, want 1 replayed and the unknown one left (mismatched)", j)
	}
	if got, _ := f.store.Get(context.Background(), "ru.dlq", raw); got.Status != dlq.StatusPending || f.pub.count() != 1 {
		t.Fatalf("replay-all left the unknown entry %s after %d republishes, want pending and 1", got.Status, f.pub.count())
	}

	m = expect(t, f.do("POST", "/internal/v1/dlq/replay", `{"topic":"ru.dlq","id":"`+raw+`","as_stored":true}`, "Authorization", bearerOf("carol")), http.StatusOK, "")
	if e := m["entry"].(map[string]any); e["status"] != "replayed" {
		t.Errorf("replay as stored answered %v", m)
	}
	if f.pub.count() != 2 {
		t.Errorf("%d republished, want 2", f.pub.count())
	}
	trail, err := f.store.Audit(context.Background(), "ru.dlq", raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(trail) != 1 || trail[0].Action != dlq.ActionReplayAsStored || trail[0].Actor != "carol" ||
		!strings.Contains(trail[0].Reason, "to queue orders.billing (worker billing)") || !strings.Contains(trail[0].Reason, "stored bytes were sent as they are") {
		t.Errorf("audit = %+v, want one replay_as_stored by carol naming the destination", trail)
	}
}
