package kafka_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// call is one handler invocation.
type call struct {
	at     time.Time
	member int
	d      broker.Delivery
	err    error
}

// recorder records handler calls; waiters wake on every call.
type recorder struct{ testenv.Recorder[call] }

func newRecorder() *recorder { return &recorder{} }

// handler records each call and returns what decide says (nil decide: nil).
func (r *recorder) handler(member int, decide func(d *broker.Delivery) error) broker.Handler {
	return func(_ context.Context, d *broker.Delivery) error {
		var err error
		if decide != nil {
			err = decide(d)
		}
		r.Add(call{at: time.Now(), member: member, d: *d, err: err})
		return err
	}
}

// successes counts the successful calls per message id.
func successes(calls []call) map[string]int {
	out := map[string]int{}
	for _, c := range calls {
		if c.err == nil {
			out[c.d.ID]++
		}
	}
	return out
}

// callsOf returns the calls for message id, in order.
func callsOf(calls []call, id string) []call {
	var out []call
	for _, c := range calls {
		if c.d.ID == id {
			out = append(out, c)
		}
	}
	return out
}

// testFailure is the error test handlers fail with.
type testFailure struct{ msg string }

func (e *testFailure) Error() string      { return e.msg }
func (e *testFailure) ErrorClass() string { return "test.Failure" }

func failure(format string, a ...any) error { return &testFailure{msg: fmt.Sprintf(format, a...)} }

// topicName returns a topic unique to the test.
func topicName(t testing.TB) string {
	n := strings.NewReplacer("/", "-", " ", "-", "_", "-").Replace(strings.ToLower(t.Name()))
	return "kt." + n + "." + broker.NewMessageID()[:6]
}

// msg is a message with id as its id and key (unless key is given).
func msg(id string, key ...string) broker.Message {
	k := id
	if len(key) > 0 {
		k = key[0]
	}
	return broker.Message{ID: id, Key: []byte(k), Value: []byte("value of " + id), Headers: map[string]string{"trace": "t-" + id}}
}

// readAll reads every record of topic from the start until n arrived.
func readAll(t testing.TB, brokers []string, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeStartOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		if ctx.Err() != nil {
			t.Fatalf("read %s: %d records, want %d", topic, len(out), n)
		}
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

func header(r *kgo.Record, name string) (string, bool) {
	for _, h := range r.Headers {
		if h.Key == name {
			return string(h.Value), true
		}
	}
	return "", false
}
