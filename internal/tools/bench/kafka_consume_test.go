package bench

import (
	"maps"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestHeadersMap checks the raw consume row's headers map: every header by
// name, the last of a repeated one winning as in Delivery.Headers, and
// built on the heap (through keepHeaders), as a Delivery's is: a map the
// compiler kept on the stack would make the row cheaper than the work it
// stands for.
func TestHeadersMap(t *testing.T) {
	r := &kgo.Record{Headers: []kgo.RecordHeader{
		{Key: "seq", Value: []byte("1")}, {Key: "type", Value: []byte("a")}, {Key: "seq", Value: []byte("2")},
	}}
	if got, want := headersMap(r), map[string]string{"seq": "2", "type": "a"}; !maps.Equal(got, want) {
		t.Errorf("headersMap = %v, want %v", got, want)
	}
	if n := testing.AllocsPerRun(100, func() { keepHeaders(headersMap(r)) }); n < 1 {
		t.Errorf("headersMap through keepHeaders: %.1f allocations, want the map's (≥ 1)", n)
	}
}
