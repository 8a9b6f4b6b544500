package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/admin"
	"github.com/redrive/redrive/dlq/operate"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// originAPI is the admin API on ops, driven over HTTP as an operator would.
type originAPI struct {
	t   *testing.T
	srv *admin.Server
}

func newOriginAPI(t *testing.T, ops *operate.Ops) *originAPI {
	srv, err := admin.New(admin.Config{Ops: ops, Listen: "127.0.0.1:0", Logger: quietLogger(),
		Tokens: []admin.Token{{Name: "operator", Secret: "origin-test-token"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return &originAPI{t: t, srv: srv}
}

func (a *originAPI) do(method, target, body string, out any) int {
	a.t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	req.Host = "127.0.0.1:8080" // a loopback address of the server
	req.Header.Set("Authorization", "Bearer origin-test-token")
	if method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json")
	}
	w := httptest.NewRecorder()
	a.srv.Handler().ServeHTTP(w, req)
	if out != nil {
		if err := json.Unmarshal(w.Body.Bytes(), out); err != nil {
			a.t.Fatalf("%s %s: %d %s", method, target, w.Code, w.Body)
		}
	}
	return w.Code
}

// check lists dlqName through the API and expects the entries whose
// message id (or, without one, error message) is in forged to be marked
// as origin mismatches and the others not; it refuses a replay of each
// forged one with 409 naming wantTarget, then runs replay-all and expects
// it to replay the others and count the forged ones.
func (a *originAPI) check(dlqName string, forged map[string]bool, wantTarget string) {
	t := a.t
	var list struct {
		Entries []admin.Entry `json:"entries"`
	}
	if code := a.do("GET", "/internal/v1/dlq/"+dlqName+"?limit=50", "", &list); code != http.StatusOK {
		t.Fatalf("list %s = %d", dlqName, code)
	}
	honest := 0
	for _, e := range list.Entries {
		name := e.MessageID + e.ErrorMessage
		isForged := false
		for k := range forged {
			if strings.Contains(name, k) {
				isForged = true
			}
		}
		if e.OriginMismatch != isForged {
			t.Errorf("entry %s (%s): origin_mismatch %v, want %v (%s)", e.ID, name, e.OriginMismatch, isForged, e.ReplayRefused)
		}
		if !isForged {
			honest++
			if !strings.Contains(e.ReplayDestination, " "+wantTarget+" (worker ") {
				t.Errorf("entry %s: replay_destination %q, want %s and its worker", e.ID, e.ReplayDestination, wantTarget)
			}
			continue
		}
		var res struct {
			Error string `json:"error"`
		}
		code := a.do("POST", "/internal/v1/dlq/replay", fmt.Sprintf(`{"topic":%q,"id":%q}`, dlqName, e.ID), &res)
		if code != http.StatusConflict || !strings.Contains(res.Error, "origin mismatch") || !strings.Contains(res.Error, wantTarget) {
			t.Errorf("replay of forged entry %s = %d %q, want 409 naming the configured target %s", e.ID, code, res.Error, wantTarget)
		}
		t.Logf("refused: %s", res.Error)
	}
	if len(list.Entries) != len(forged)+honest || honest == 0 {
		t.Fatalf("listed %d entries (%d honest), want the %d forged and the honest ones", len(list.Entries), honest, len(forged))
	}
	var started struct {
		Job dlq.Job `json:"job"`
	}
	if code := a.do("POST", "/internal/v1/dlq/replay-all?rate=0&topic="+dlqName, "", &started); code != http.StatusAccepted {
		t.Fatalf("replay-all = %d", code)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		j, _ := a.srv.Jobs().Job(started.Job.ID)
		if j.State != dlq.JobRunning {
			p := j.Progress
			if j.State != dlq.JobDone || p.Replayed != int64(honest) || p.Mismatched != int64(len(forged)) {
				t.Errorf("replay-all job = %+v, want %d replayed and %d mismatched", j, honest, len(forged))
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("replay-all still running: %+v", j)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRabbitMQOriginMismatch (issue 12): messages published straight into
// one worker's DLQ (raw client) that claim another worker's source are
// stored, marked, refused on replay and skipped by replay-all; the other
// worker's queue stays untouched and only the honest entry reaches the
// DLQ's own worker (counted).
func TestRabbitMQOriginMismatch(t *testing.T) {
	ctx := t.Context()
	id := broker.NewMessageID()[:6]
	b := Open(t, fmt.Sprintf("broker: rabbitmq\nrabbitmq: {url: %q, prefix: orig-%s}\n", testenv.RabbitMQ.URL(), id)).(*rabbit.Broker)
	w1 := broker.Subscription{Topic: "a." + id, Group: "w1"}
	w2 := broker.Subscription{Topic: "b." + id, Group: "w2"}
	t.Cleanup(func() { deleteTopology(t, b.Plan(w1, w2)) })
	declare(t, b, w1, w2)
	q1, q2 := rabbit.Queue(w1.Topic, w1.Group), rabbit.Queue(w2.Topic, w2.Group)
	dlq1 := rabbit.DLQ(q1)

	conn, err := amqp.Dial(testenv.RabbitMQ.URL())
	if err != nil {
		testenv.RabbitMQ.Fail(t, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	msgs := []amqp.Publishing{
		{MessageId: "forged-other-worker", Body: []byte("inject"), Headers: amqp.Table{
			broker.HeaderSource: q2, broker.HeaderWorker: w2.Group, driver.HeaderTopic: w2.Topic, broker.HeaderReason: "permanent"}},
		{MessageId: "forged-other-source", Body: []byte("inject"), Headers: amqp.Table{
			broker.HeaderSource: q2, broker.HeaderWorker: w1.Group, broker.HeaderReason: "permanent"}},
		{MessageId: "forged-other-topic", Body: []byte("inject"), Headers: amqp.Table{
			driver.HeaderTopic: w2.Topic, broker.HeaderReason: "permanent"}},
		{MessageId: "honest", Body: []byte("ok"), Headers: amqp.Table{
			broker.HeaderSource: q1, broker.HeaderWorker: w1.Group, driver.HeaderTopic: w1.Topic, broker.HeaderReason: "permanent"}},
	}
	for _, m := range msgs {
		if err := ch.PublishWithContext(ctx, "", dlq1, true, false, m); err != nil { // straight into the DLQ
			t.Fatal(err)
		}
	}
	s := &suite{env: Env{Name: string(rabbit.Name), Router: rabbit.Router{}}}
	st := newCounting(s.store(t, testenv.PostgreSQL.URL(), ""))
	s.keeper(t, b, st, dlq1, nil)
	st.waitAll(t, dlq1, int64(len(msgs)), 60*time.Second)

	api := newOriginAPI(t, s.ops(t, b, st, [2]string{w1.Topic, w1.Group}, [2]string{w2.Topic, w2.Group}))
	api.check(dlq1, map[string]bool{"forged-other-worker": true, "forged-other-source": true, "forged-other-topic": true}, q1)

	// Counting: the other worker's queue got nothing, the DLQ's worker the
	// honest one only, and the forged ones wait, pending.
	waitDepth(t, ch, q1, 1)
	waitDepth(t, ch, q2, 0)
	got := getN(t, ch, q1, 1)[0]
	if got.MessageId != "honest" {
		t.Errorf("%s received %s, want the honest entry only", q1, got.MessageId)
	}
	pending, err := st.Count(ctx, dlq.Query{DLQ: dlq1, Status: dlq.StatusPending})
	if err != nil || pending != 3 {
		t.Errorf("%d entries pending, want the 3 forged ones (%v)", pending, err)
	}
	t.Logf("published into %s: %d; replayed to %s: 1; to %s: 0; left pending: %d", dlq1, len(msgs), q1, q2, pending)
}

// TestKafkaOriginMismatch (issue 12): records produced straight into a
// topic's DLQ (raw client) that claim another worker or topic, as a
// redrive envelope or as Spring Kafka dead-letter headers, are stored,
// marked, refused on replay and skipped by replay-all; the other worker's
// topics stay untouched and only the honest entry reaches the worker's
// retry topic (counted by end offsets).
func TestKafkaOriginMismatch(t *testing.T) {
	ctx := t.Context()
	brokers := kafkatest.Cluster(t)
	env := kafkaEnv(brokers)
	b := env.New(t).(*kafka.Broker)
	id := broker.NewMessageID()[:6]
	w1 := broker.Subscription{Topic: "a." + id, Group: "w1"}
	w2 := broker.Subscription{Topic: "b." + id, Group: "w2"}
	declare(t, b, w1, w2)
	dlq1 := kafka.DLQTopic(w1.Topic)

	envelope := func(e dlq.Entry) []byte {
		e.OriginalPartition, e.OriginalOffset, e.Reason, e.OriginalValue = 0, 0, string(driver.ReasonPermanent), []byte("inject")
		v, err := kafka.EncodeEnvelope(e)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	recs := []*kgo.Record{
		{Value: envelope(dlq.Entry{MessageID: "forged-other-worker", OriginalTopic: w2.Topic, Worker: w2.Group, Source: w2.Topic})},
		{Value: envelope(dlq.Entry{MessageID: "forged-other-topic", OriginalTopic: w2.Topic, Worker: w1.Group, Source: w2.Topic})},
		{Value: envelope(dlq.Entry{MessageID: "forged-unknown-worker", OriginalTopic: w1.Topic, Worker: "ghost", Source: w1.Topic})},
		{Value: []byte("spring payload"), Headers: []kgo.RecordHeader{ // Spring Kafka's DeadLetterPublishingRecoverer
			{Key: "kafka_dlt-original-topic", Value: []byte(w2.Topic)},
			{Key: "kafka_dlt-original-consumer-group", Value: []byte(w2.Group)},
			{Key: "kafka_dlt-exception-fqcn", Value: []byte("java.lang.IllegalStateException")},
			{Key: "kafka_dlt-exception-message", Value: []byte("forged-spring")}}},
		{Value: envelope(dlq.Entry{MessageID: "honest", OriginalTopic: w1.Topic, Worker: w1.Group, Source: w1.Topic})},
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(dlq1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	others := []string{w2.Topic, kafka.RetryTopic(w2.Topic, w2.Group), w1.Topic}
	before := map[string]map[int32]int64{}
	for _, topic := range append(others, kafka.RetryTopic(w1.Topic, w1.Group)) {
		before[topic] = kafkatest.EndOffsets(ctx, t, brokers, topic)
	}

	s := &suite{env: env}
	st := newCounting(s.store(t, testenv.PostgreSQL.URL(), ""))
	s.keeper(t, b, st, dlq1, nil)
	st.waitAll(t, dlq1, int64(len(recs)), 60*time.Second)
	api := newOriginAPI(t, s.ops(t, b, st, [2]string{w1.Topic, w1.Group}, [2]string{w2.Topic, w2.Group}))
	api.check(dlq1, map[string]bool{"forged-other-worker": true, "forged-other-topic": true, "forged-unknown-worker": true, "forged-spring": true},
		kafka.RetryTopic(w1.Topic, w1.Group))

	for _, topic := range others {
		if after := kafkatest.EndOffsets(ctx, t, brokers, topic); sum(after) != sum(before[topic]) {
			t.Errorf("%s went from %d to %d records: a forged entry reached it", topic, sum(before[topic]), sum(after))
		}
	}
	retry1 := kafka.RetryTopic(w1.Topic, w1.Group)
	if n := sum(kafkatest.EndOffsets(ctx, t, brokers, retry1)) - sum(before[retry1]); n != 1 {
		t.Errorf("%s got %d records, want the honest entry only", retry1, n)
	}
	replayed := readTopic(t, brokers, retry1, 1, nil)
	if len(replayed) == 1 {
		if r := replayed[0]; string(r.Value) != "inject" || !slicesHasHeader(r, broker.HeaderReplayedFrom) {
			t.Errorf("%s holds %q, want the honest entry's replay", retry1, r.Value)
		}
	}
	pending, err := st.Count(ctx, dlq.Query{DLQ: dlq1, Status: dlq.StatusPending})
	if err != nil || pending != 4 {
		t.Errorf("%d entries pending, want the 4 forged ones (%v)", pending, err)
	}
	t.Logf("produced into %s: %d; replayed to %s: 1; to the other worker's topics: 0; left pending: %d", dlq1, len(recs), retry1, pending)
}

func sum(m map[int32]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}
