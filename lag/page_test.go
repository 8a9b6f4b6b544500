package lag

import (
	"bytes"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// constCollector is how a Sampler was collected before its families were
// built once per sample: a const metric per series, per scrape, from
// LastGroups and LastDepths. The reference of TestSamplerPage.
type constCollector struct{ s *Sampler }

func (c constCollector) Describe(ch chan<- *prometheus.Desc) { c.s.Describe(ch) }

func (c constCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.groupsOnce || s.depthsOnce {
		ch <- constGauge(s.upDesc, boolFloat(s.lastErr() == nil), s.cfg.Source)
	}
	if s.groupMon != nil && s.groupsOnce {
		for _, t := range s.groups.Topics {
			if t.Errors == t.Partitions {
				continue
			}
			ch <- constGauge(s.lagDesc, float64(t.Lag), t.Group, t.Topic)
			if t.TimeLagKnown {
				ch <- constGauge(s.secondsDesc, t.TimeLag.Seconds(), t.Group, t.Topic)
			}
			ch <- constGauge(s.statusDesc, 1, t.Group, t.Topic, t.Status.Label(), t.Level.Label())
		}
		for _, p := range s.groups.Partitions {
			if p.Err == nil {
				ch <- constGauge(s.partDesc, float64(p.Lag), p.Group, p.Topic, strconv.Itoa(int(p.Partition)))
			}
		}
	}
	if s.depthMon != nil && s.depthsOnce {
		for _, d := range s.depths {
			if d.Exists {
				ch <- constGauge(s.depthDesc, float64(d.Messages), d.Queue)
				ch <- constGauge(s.consDesc, float64(d.Consumers), d.Queue)
			}
		}
	}
}

func constGauge(d *prometheus.Desc, v float64, labels ...string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(d, prometheus.GaugeValue, v, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}

// encodeAll encodes fams as a promhttp handler writes a page.
func encodeAll(t testing.TB, fams []*dto.MetricFamily, f expfmt.Format) string {
	t.Helper()
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, f)
	for _, mf := range fams {
		if err := enc.Encode(mf); err != nil {
			t.Fatalf("encode %s: %v", mf.GetName(), err)
		}
	}
	if c, ok := enc.(expfmt.Closer); ok {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return buf.String()
}

// concat is what Encoded returns as a page.
func concat(t testing.TB, fams []EncodedFamily, f expfmt.Format) string {
	t.Helper()
	var buf bytes.Buffer
	for _, e := range fams {
		buf.Write(e.Data)
	}
	if c, ok := expfmt.NewEncoder(&buf, f).(expfmt.Closer); ok {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return buf.String()
}

func gather(t testing.TB, g prometheus.Gatherer) []*dto.MetricFamily {
	t.Helper()
	fams, err := g.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	return fams
}

// formats are the exposition formats a scrape negotiates with these Accept
// headers.
func formats() map[string]expfmt.Format {
	out := map[string]expfmt.Format{}
	for name, accept := range map[string]string{
		"text (no Accept)": "",
		"openmetrics (Prometheus 3)": "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6," +
			"application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2",
		"protobuf":          "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3",
		"text, underscores": "text/plain;version=0.0.4;escaping=underscores",
	} {
		h := http.Header{}
		if accept != "" {
			h.Set("Accept", accept)
		}
		out[name] = expfmt.NegotiateAccept(h, expfmt.DefaultOpenMetricsAcceptedFormats()...)
	}
	return out
}

// The families built once per sample are, in every format, byte for byte
// what a registry made of the const metrics collected per scrape before
// (sorted families and series, partition labels sorted as strings, a
// failed source's series withheld), whether served by Gather, Encoded or
// the Collector; they change at a sample and only then.
func TestSamplerPage(t *testing.T) {
	e := newKafka(t)
	const wide = "wide" // 12 partitions: "10" sorts before "2"
	ctx := t.Context()
	resp, err := e.Admin.CreateTopics(ctx, 12, 1, nil, wide)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", wide, err)
	}
	var recs []*kgo.Record
	for p := range int32(12) {
		for range int(p) + 1 {
			recs = append(recs, &kgo.Record{Topic: wide, Partition: p, Value: []byte("x")})
		}
	}
	if err := e.Client.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	e.produce(t, 0, 6, time.Now())
	e.produce(t, 2, 3, time.Now())
	commit := func(group string, at int64) {
		t.Helper()
		var offs kadm.Offsets
		for p := range int32(12) {
			offs.AddOffset(wide, p, min(at, int64(p)+1), -1)
		}
		for p := range int32(3) {
			offs.AddOffset(topic, p, 0, -1)
		}
		if err := e.Admin.CommitAllOffsets(ctx, group, offs); err != nil {
			t.Fatalf("commit: %v", err)
		}
	}
	commit("b-group", 0)
	commit("a-group", 1)
	ch := rabbitChannel(t)
	q := declareQueue(t, ch, 2)

	k := e.measurer(t, "b-group", "a-group")
	tr, _ := NewTracker(TrackerConfig{Thresholds: Thresholds{wide: {Warning: 5, Critical: 10}}})
	s, err := NewSampler(SamplerConfig{Monitor: both{k, newDepth(t, testenv.RabbitMQ.URL(), q, q+".absent")}, Source: "both", Tracker: tr, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ref := prometheus.NewPedanticRegistry()
	ref.MustRegister(constCollector{s})
	asCollector := prometheus.NewPedanticRegistry()
	asCollector.MustRegister(s)
	fmts := formats()

	// check compares every way of serving the page with the reference
	// and returns the page in text.
	check := func(step string) string {
		t.Helper()
		for name, f := range fmts {
			want := encodeAll(t, gather(t, ref), f)
			fams, gen, err := s.Encoded(f)
			if err != nil {
				t.Fatalf("%s, %s: Encoded: %v", step, name, err)
			}
			again, gen2, _ := s.Encoded(f)
			for _, got := range []struct{ how, page string }{
				{"Gather", encodeAll(t, gather(t, s), f)},
				{"Encoded", concat(t, fams, f)},
				{"Encoded again", concat(t, again, f)},
				{"as a Collector", encodeAll(t, gather(t, asCollector), f)},
				{"Gatherers", encodeAll(t, gather(t, prometheus.Gatherers{prometheus.NewRegistry(), s}), f)},
			} {
				if got.page != want {
					t.Errorf("%s, %s: %s serves\n%s\nwant (const metrics per scrape)\n%s", step, name, got.how, got.page, want)
				}
			}
			if gen2 != gen || (len(fams) > 0 && &fams[0].Data[0] != &again[0].Data[0]) {
				t.Errorf("%s, %s: two scrapes between samples were encoded twice (generation %d, %d)", step, name, gen, gen2)
			}
		}
		return encodeAll(t, gather(t, s), fmts["text (no Accept)"])
	}

	if page := check("before the first sample"); page != "" {
		t.Fatalf("before the first sample: %q, want nothing", page)
	}
	if err := s.Sample(ctx); err != nil {
		t.Fatalf("Sample: %v", err)
	}
	first := check("first sample")
	for _, want := range []string{
		`kafka_consumer_lag_partition{group="a-group",partition="10",topic="wide"} 10`,
		`kafka_consumer_lag{group="b-group",topic="wide"} 78`,
		`rabbitmq_queue_depth{queue="` + q + `"} 2`,
	} {
		if !bytes.Contains([]byte(first), []byte(want)) {
			t.Errorf("first sample: no %s in\n%s", want, first)
		}
	}
	_, gen1, _ := s.Encoded(fmts["text (no Accept)"])

	// The broker changes; the page does not until the next sample.
	commit("b-group", 5)
	if err := ch.PublishWithContext(ctx, "", q, true, false, amqp.Publishing{Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if page := check("between samples"); page != first {
		t.Errorf("the page changed between samples:\n%s\nwas\n%s", page, first)
	}
	if err := s.Sample(ctx); err != nil {
		t.Fatalf("Sample: %v", err)
	}
	distinct := slices.Sorted(maps.Values(fmts))
	if warm := encodedAhead(s); !slices.Equal(warm, slices.Compact(distinct)) {
		t.Errorf("the sample encoded the page ahead in %v, want the formats scraped before, %v", warm, distinct)
	}
	second := check("second sample")
	if _, gen2, _ := s.Encoded(fmts["text (no Accept)"]); gen2 == gen1 {
		t.Errorf("generation %d did not change with a sample", gen2)
	}
	for _, want := range []string{
		`kafka_consumer_lag{group="b-group",topic="wide"} 28`,
		`rabbitmq_queue_depth{queue="` + q + `"} 3`,
	} {
		if !bytes.Contains([]byte(second), []byte(want)) {
			t.Errorf("second sample: no %s in\n%s", want, second)
		}
	}
}

// encodedAhead lists the formats the last page was encoded in before any
// scrape asked for them.
func encodedAhead(s *Sampler) []expfmt.Format {
	p := s.page.Load()
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []expfmt.Format
	for f, e := range p.enc {
		if !e.requested.Load() && e.fams != nil {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}

// A sample encodes its page ahead in the formats scraped within the last
// warmSamples samples, and in no other.
func TestSamplerWarmFormats(t *testing.T) {
	q := declareQueue(t, rabbitChannel(t), 1)
	s, err := NewSampler(SamplerConfig{Monitor: newDepth(t, testenv.RabbitMQ.URL(), q), Source: "rabbitmq", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	fmts := formats()
	text, om := fmts["text (no Accept)"], fmts["openmetrics (Prometheus 3)"]
	steps := []struct {
		name   string
		scrape []expfmt.Format // after the sample
		ahead  []expfmt.Format // encoded by the sample
	}{
		{name: "first sample", scrape: []expfmt.Format{text, om}},
		{name: "second", scrape: []expfmt.Format{text}, ahead: []expfmt.Format{text, om}},
	}
	// om was last scraped from page 1: pages 2 to 1+warmSamples are
	// encoded in it ahead, not the next.
	for i := range warmSamples {
		steps = append(steps, struct {
			name   string
			scrape []expfmt.Format
			ahead  []expfmt.Format
		}{name: "no openmetrics scrape " + strconv.Itoa(i+1), scrape: []expfmt.Format{text}, ahead: []expfmt.Format{text, om}})
	}
	steps[len(steps)-1].ahead = []expfmt.Format{text}
	for _, st := range steps {
		if err := s.Sample(t.Context()); err != nil {
			t.Fatalf("%s: Sample: %v", st.name, err)
		}
		want := slices.Clone(st.ahead)
		slices.Sort(want)
		if got := encodedAhead(s); !slices.Equal(got, want) {
			t.Errorf("%s: encoded ahead in %v, want %v", st.name, got, want)
		}
		for _, f := range st.scrape {
			if _, _, err := s.Encoded(f); err != nil {
				t.Fatalf("%s: Encoded(%s): %v", st.name, f, err)
			}
		}
	}
}
