package kafka_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/dlq"
)

// TestEnvelopeShareMembers: group_type and delivery_count round-trip, are
// omitted for a consumer group's dead letter (an old envelope's bytes
// stay the same), and are read leniently: a writer that typed them
// otherwise does not make its envelope unreadable. A reader that does
// not know them (a struct without them) reads the rest.
func TestEnvelopeShareMembers(t *testing.T) {
	e := dlq.Entry{OriginalTopic: "t", OriginalPartition: 1, OriginalOffset: 2, OriginalValue: []byte("v"), Reason: "max_claims",
		GroupType: kafka.GroupTypeShare, DeliveryCount: 4}
	b, err := kafka.EncodeEnvelope(e)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"group_type":"share","delivery_count":4`) {
		t.Errorf("envelope %s: no group_type and delivery_count", b)
	}
	got, err := kafka.DecodeEnvelope(b)
	if err != nil || got.GroupType != kafka.GroupTypeShare || got.DeliveryCount != 4 {
		t.Fatalf("decoded %+v, %v", got, err)
	}
	var old struct {
		OriginalTopic string `json:"original_topic"`
		Reason        string `json:"reason"`
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(&old); err != nil || old.OriginalTopic != "t" || old.Reason != "max_claims" {
		t.Errorf("a reader without the share members: %+v, %v", old, err)
	}
	e.GroupType, e.DeliveryCount = "", 0
	if b, _ := kafka.EncodeEnvelope(e); strings.Contains(string(b), "group_type") || strings.Contains(string(b), "delivery_count") {
		t.Errorf("a consumer group's envelope carries share members: %s", b)
	}
	for _, c := range []struct {
		raw, gt string
		n       int
	}{
		{`"group_type":7,"delivery_count":"3"`, "", 0},
		{`"group_type":null,"delivery_count":-2`, "", 0},
		{`"group_type":"share","delivery_count":1e3`, "share", 0},
		{`"group_type":{"a":1},"delivery_count":99999999999`, "", 0},
		{`"delivery_count":2`, "", 2},
	} {
		got, err := kafka.DecodeEnvelope([]byte(`{"original_topic":"t",` + c.raw + `}`))
		if err != nil || got.GroupType != c.gt || got.DeliveryCount != c.n {
			t.Errorf("%s: %q %d, %v; want %q %d", c.raw, got.GroupType, got.DeliveryCount, err, c.gt, c.n)
		}
	}
}
