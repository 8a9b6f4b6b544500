package console_test

import (
	"context"
	"net/http"
	"testing"
)

// The entry page names where a replay goes as the CLI, the API and the
// audit log do (dlq.Destination), and the replay's audit row says it.
func TestEntryPageNamesTheReplayDestination(t *testing.T) {
	f := newFixture(t, stores[0].Open(t), nil)
	rec := f.insert(1, nil)[0]
	const dest = "topic orders.retry.billing (worker billing)"
	if got := f.ops.Destination(rec); got != dest {
		t.Fatalf("Destination = %q, want %q", got, dest)
	}
	c := f.client().login(opToken)
	page := "/dlq/" + f.dlq + "/" + rec.ID
	expect(t, "pending entry page", c.get(page), http.StatusOK, "Replay to "+dest+"</button>", `<td class="mono" id="destination">`+dest+"</td>")
	if r := c.post(page+"/replay", nil); r.status != http.StatusSeeOther {
		t.Fatalf("replay = %d: %s", r.status, clip(r.body))
	}
	expect(t, "replayed entry page", c.get(page), http.StatusOK, "<td>replay</td><td>replaying</td><td>replayed</td><td>to "+dest+"</td>")
	_, trail, err := f.ops.Show(context.Background(), f.dlq, rec.ID)
	if err != nil || len(trail) != 1 || trail[0].Reason != "to "+dest {
		t.Errorf("audit %+v, %v; want the replay's row to say %q", trail, err, "to "+dest)
	}
}
