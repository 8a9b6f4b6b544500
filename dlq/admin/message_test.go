package admin_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/wire"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/admin"
)

// TestPayloadAndOrigin: an entry shows at most the payload preview and
// links to the whole payload; the download is the payload, raw; an entry
// whose recorded origin disagrees with its DLQ's route is marked, refused
// with 409 naming both targets, and skipped and counted by replay-all.
func TestPayloadAndOrigin(t *testing.T) {
	for _, st := range stores {
		t.Run(st.Name, func(t *testing.T) {
			f := newFixture(t, st.Open(t))
			t.Run("Preview", func(t *testing.T) { testPreview(t, f) })
			t.Run("Download", func(t *testing.T) { testDownload(t, f) })
			t.Run("Origin", func(t *testing.T) { testOrigin(t, f) })
		})
	}
}

// big is a text payload over the fixture's 1024-byte preview, with a
// two-byte character across the cut.
var big = []byte(strings.Repeat("a", 1023) + "é" + strings.Repeat("b", 5000))

func testPreview(t *testing.T, f *fixture) {
	ts := []byte{1, 0, 1, 3, 'n', 'u', 'm', 's', 0xff, 0xfe} // a wire form: header "num", int16 -2
	recs := f.insert("pl.dlq", 3, func(i int, r *dlq.Record) {
		switch i {
		case 0:
			r.Entry.OriginalValue = big
			r.Entry.OriginalWire = ts
		case 1:
			r.Entry.OriginalValue = append([]byte{0xff}, big...) // binary
		}
	})
	m := expect(t, f.do("GET", "/internal/v1/dlq/pl.dlq/"+recs[0].ID, ""), http.StatusOK, "")
	if m["payload_bytes"] != float64(len(big)) || m["payload_truncated"] != true || m["payload_encoding"] != "utf8" ||
		m["payload"] != strings.Repeat("a", 1023) || m["payload_url"] != "/internal/v1/dlq/pl.dlq/"+recs[0].ID+"/payload" {
		t.Errorf("cut text payload: bytes %v truncated %v encoding %v url %v payload %.40q", m["payload_bytes"], m["payload_truncated"],
			m["payload_encoding"], m["payload_url"], m["payload"])
	}
	w, _ := m["wire"].(map[string]any)
	hs, _ := w["headers"].([]any)
	if len(hs) != 1 || hs[0].(map[string]any)["type"] != "int16" || hs[0].(map[string]any)["value"] != -2.0 {
		t.Errorf("wire view = %v, want header num of type int16 and value -2", m["wire"])
	}
	if got, err := wire.Decode(ts); err != nil || len(got.Headers) != 1 {
		t.Fatalf("the test's wire form is wrong: %v", err)
	}
	m = expect(t, f.do("GET", "/internal/v1/dlq/pl.dlq/"+recs[1].ID, ""), http.StatusOK, "")
	if m["payload_truncated"] != true || m["payload_encoding"] != "base64" || len(m["payload"].(string)) != base64.StdEncoding.EncodedLen(1024) {
		t.Errorf("cut binary payload: truncated %v encoding %v, %d characters", m["payload_truncated"], m["payload_encoding"], len(m["payload"].(string)))
	}
	m = expect(t, f.do("GET", "/internal/v1/dlq/pl.dlq/"+recs[2].ID, ""), http.StatusOK, "")
	if _, ok := m["payload_truncated"]; ok || m["payload_encoding"] != "json" || m["wire"] != nil {
		t.Errorf("small payload: %v", m)
	}
	if !utf8.Valid(big[:1025]) || utf8.Valid(big[:1024]) {
		t.Fatal("the test payload does not cut a character")
	}
}

func testDownload(t *testing.T, f *fixture) {
	recs := f.insert("dl.dlq", 3, func(i int, r *dlq.Record) {
		switch i {
		case 0:
			r.Entry.OriginalValue = bytes.Repeat(big, 300) // 1.8 MB, several chunks
		case 1:
			r.Entry.OriginalValue = nil
		case 2:
			r.Entry.OriginalValue = []byte{}
		}
	})
	get := func(id string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", "/internal/v1/dlq/dl.dlq/"+id+"/payload", nil)
		req.Host = "127.0.0.1:8080"
		req.Header.Set("Authorization", "Bearer "+secret)
		w := httptest.NewRecorder()
		f.srv.Handler().ServeHTTP(w, req)
		return w
	}
	w := get(recs[0].ID)
	if w.Code != http.StatusOK || !bytes.Equal(w.Body.Bytes(), recs[0].Entry.OriginalValue) ||
		w.Header().Get("Content-Type") != "application/octet-stream" ||
		w.Header().Get("Content-Disposition") != `attachment; filename="`+recs[0].ID+`.payload"` ||
		w.Header().Get("Content-Length") != strconv.Itoa(len(recs[0].Entry.OriginalValue)) || w.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("download = %d, %d bytes, headers %v", w.Code, w.Body.Len(), w.Header())
	}
	if w := get(recs[1].ID); w.Code != http.StatusNoContent || w.Body.Len() != 0 {
		t.Errorf("download of no payload = %d, %d bytes; want 204", w.Code, w.Body.Len())
	}
	if w := get(recs[2].ID); w.Code != http.StatusOK || w.Body.Len() != 0 || w.Header().Get("Content-Length") != "0" {
		t.Errorf("download of an empty payload = %d, %d bytes", w.Code, w.Body.Len())
	}
	expect(t, f.do("GET", "/internal/v1/dlq/dl.dlq/nope/payload", ""), http.StatusNotFound, "")
	expect(t, f.do("GET", "/internal/v1/dlq/dl.dlq/-x/payload", ""), http.StatusBadRequest, "id")
	req := httptest.NewRequest("GET", "/internal/v1/dlq/dl.dlq/"+recs[0].ID+"/payload", nil)
	req.Host = "127.0.0.1:8080"
	w = httptest.NewRecorder()
	f.srv.Handler().ServeHTTP(w, req)
	if w.Code != http.StatusUnauthorized {
		t.Errorf("download without a token = %d, want 401", w.Code)
	}
}

func testOrigin(t *testing.T, f *fixture) {
	recs := f.insert("orders.dlq", 4, func(i int, r *dlq.Record) {
		switch i {
		case 1:
			r.Entry.Worker, r.Entry.Source = "payouts", "orders.payouts" // claims another worker
		case 3:
			r.Entry.Reason = string(driver.ReasonUndecodable) // its headers were refused by the client
		}
	})
	other := f.insert("unrouted.dlq", 1, nil)[0]
	m := expect(t, f.do("GET", "/internal/v1/dlq/orders.dlq?order=oldest", ""), http.StatusOK, "")
	entries := m["entries"].([]any)
	for i, e := range entries {
		e := e.(map[string]any)
		if i == 1 {
			if e["origin_mismatch"] != true || e["replay_destination"] != nil || !strings.Contains(e["replay_refused"].(string), `worker "payouts"`) {
				t.Errorf("the mismatched entry is listed as %v", e)
			}
			continue
		}
		if i == 3 {
			if e["origin_mismatch"] != nil || e["message_unknown"] != true || !strings.Contains(e["replay_refused"].(string), "could not be decoded") {
				t.Errorf("the undecodable entry is listed as %v", e)
			}
			continue
		}
		if e["origin_mismatch"] != nil || e["replay_destination"] != "queue orders.billing (worker billing)" || e["replay_refused"] != nil {
			t.Errorf("entry %d is listed as %v", i, e)
		}
	}
	d := expect(t, f.do("GET", "/internal/v1/dlq/orders.dlq/"+recs[1].ID, ""), http.StatusOK, "")
	if d["origin_mismatch"] != true {
		t.Errorf("the entry page does not mark the mismatch: %v", d)
	}
	before := f.pub.count()
	m = expect(t, f.do("POST", "/internal/v1/dlq/replay", `{"topic":"orders.dlq","id":"`+recs[1].ID+`"}`), http.StatusConflict, "")
	for _, want := range []string{"origin mismatch", `worker "payouts"`, `source "orders.payouts"`, `"orders.billing"`} {
		if !strings.Contains(m["error"].(string), want) {
			t.Errorf("409 does not name %s: %s", want, m["error"])
		}
	}
	m = expect(t, f.do("POST", "/internal/v1/dlq/replay", `{"topic":"unrouted.dlq","id":"`+other.ID+`"}`), http.StatusConflict, "")
	if !strings.Contains(m["error"].(string), "not the DLQ of a configured worker") {
		t.Errorf("409 of an unrouted DLQ: %s", m["error"])
	}
	m = expect(t, f.do("POST", "/internal/v1/dlq/replay", `{"topic":"orders.dlq","id":"`+recs[3].ID+`"}`), http.StatusConflict, "")
	if m["code"] != admin.CodeUnknownMessage || !strings.Contains(m["error"].(string), "could not be decoded") {
		t.Errorf("409 of an undecodable entry: %v", m)
	}
	if f.pub.count() != before {
		t.Error("a refused entry was republished")
	}
	w := f.do("POST", "/internal/v1/dlq/replay-all?topic=orders.dlq&rate=0", "")
	expect(t, w, http.StatusAccepted, "")
	j := waitJob(t, f, w.Header().Get("Location"))
	p := j["progress"].(map[string]any)
	if j["state"] != "done" || p["total"] != 4.0 || p["replayed"] != 2.0 || p["mismatched"] != 2.0 {
		t.Errorf("replay-all job = %v, want 2 replayed and 2 mismatched (one undecodable)", j)
	}
	if got, _ := f.store.Get(context.Background(), "orders.dlq", recs[1].ID); got.Status != dlq.StatusPending {
		t.Errorf("the mismatched entry is %s, want pending", got.Status)
	}
	if f.pub.count() != before+2 {
		t.Errorf("%d republished by replay-all, want 2", f.pub.count()-before)
	}
}
