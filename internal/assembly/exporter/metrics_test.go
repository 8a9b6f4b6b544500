package exporter_test

import (
	"compress/gzip"
	"context"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/internal/assembly/exporter"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/lag"
)

// page is one /metrics response: status, the headers a scraper reads and
// the body, decompressed.
type page struct {
	status                      int
	contentType, encoding, vary string
	body                        string
}

// fetch GETs url with the Accept and Accept-Encoding headers given (none
// when empty), without the transport's own compression.
func fetch(t *testing.T, u, accept, acceptEncoding string) page {
	t.Helper()
	p, err := fetchPage(t.Context(), u, accept, acceptEncoding)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	return p
}

func fetchPage(ctx context.Context, u, accept, acceptEncoding string) (page, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return page{}, err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if acceptEncoding != "" {
		req.Header.Set("Accept-Encoding", acceptEncoding)
	}
	resp, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Do(req)
	if err != nil {
		return page{}, err
	}
	defer resp.Body.Close()
	var body io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(resp.Body)
		if err != nil {
			return page{}, err
		}
		body = gz
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return page{}, err
	}
	return page{resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Content-Encoding"),
		strings.Join(resp.Header.Values("Vary"), ", "), string(b)}, nil
}

// kafkaPageEnv is an exporter over a kfake cluster: group billing on
// topic orders (12 partitions), and gauges of the exporter's registry
// whose names sort before, between and after the lag sampler's.
type kafkaPageEnv struct {
	cl      *kgo.Client
	sampler *lag.Sampler
	srv     *exporter.Server
	url     string // the exporter
	ref     string // promhttp over srv.Gatherer(), the reference
}

const pageTopic = "orders"

func newKafkaPageEnv(t *testing.T, extra ...prometheus.Collector) *kafkaPageEnv {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(12, pageTopic))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	var recs []*kgo.Record
	for p := range int32(12) {
		for range 3 {
			recs = append(recs, &kgo.Record{Topic: pageTopic, Partition: p, Value: []byte("x")})
		}
	}
	if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	e := &kafkaPageEnv{cl: cl}
	e.commit(t, 1)
	k, err := kafka.NewLagMonitor(cl, kafka.LagConfig{Groups: []string{"billing"}})
	if err != nil {
		t.Fatal(err)
	}
	e.sampler, err = lag.NewSampler(lag.SamplerConfig{Monitor: k, Source: kafka.Name, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	var cs []prometheus.Collector
	for _, name := range []string{"aaa_first", "kafka_consumer_lag_other", "redrive_dlq_between", "zzz_last"} {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: "A gauge of the test."})
		g.Set(float64(len(name)))
		cs = append(cs, g)
	}
	e.srv, err = exporter.New(exporter.Config{Broker: "kafka", Lag: e.sampler, Logger: quiet(),
		Collectors: append(cs, extra...)})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(e.srv.Handler())
	t.Cleanup(ts.Close)
	ref := httptest.NewServer(promhttp.HandlerFor(e.srv.Gatherer(), promhttp.HandlerOpts{EnableOpenMetrics: true}))
	t.Cleanup(ref.Close)
	e.url, e.ref = ts.URL+"/metrics", ref.URL
	return e
}

// commit sets billing's offset on every partition.
func (e *kafkaPageEnv) commit(t *testing.T, at int64) {
	t.Helper()
	var offs kadm.Offsets
	for p := range int32(12) {
		offs.AddOffset(pageTopic, p, at, -1)
	}
	if err := kadm.NewClient(e.cl).CommitAllOffsets(context.Background(), "billing", offs); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

// stable are the families of the page that change only with a sample (the
// Go and process metrics change at every scrape); as a name[] query.
func stableQuery() string {
	q := url.Values{}
	for _, n := range []string{"aaa_first", lag.MetricKafkaLag, lag.MetricKafkaLagPartition, "kafka_consumer_lag_other",
		lag.MetricConsumerStatus, "redrive_dlq_between", lag.MetricUp, "zzz_last"} {
		q.Add("name[]", n)
	}
	return "?" + q.Encode()
}

var (
	accepts = []struct{ name, header string }{
		{"text", ""},
		{"openmetrics", "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5," +
			"text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"},
		{"protobuf", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3"},
		{"text underscores", "text/plain;version=0.0.4;escaping=underscores"},
	}
	encodings = []string{"", "gzip", "identity", "gzip;q=0.5, identity", "identity;q=0.5, gzip", "*", "br", "gzip;q=0", "gzip;level=1, identity;q=0.1"}
)

// The exporter's /metrics serves, in every format and content encoding a
// scraper may ask for, exactly what promhttp serves over the registry and
// the lag sampler as prometheus.Gatherers; the lag families change with a
// sample and only then: two scrapes between samples read the same, a
// scrape after a sample reads its values.
func TestMetricsPage(t *testing.T) {
	e := newKafkaPageEnv(t)
	want := func(step string) map[string]string {
		t.Helper()
		pages := map[string]string{}
		for _, a := range accepts {
			for _, enc := range encodings {
				got := fetch(t, e.url+stableQuery(), a.header, enc)
				ref := fetch(t, e.ref+stableQuery(), a.header, enc)
				if got != ref {
					t.Errorf("%s, Accept %s, Accept-Encoding %q: /metrics serves\n%+v\nwant (promhttp over Gatherers)\n%+v", step, a.name, enc, got, ref)
				}
				if got.status != http.StatusOK {
					t.Errorf("%s, Accept %s, Accept-Encoding %q: status %d", step, a.name, enc, got.status)
				}
				pages[a.name] = got.body
			}
		}
		return pages
	}
	text := func(t *testing.T) *textPage {
		t.Helper()
		got := fetch(t, e.url, "", "gzip")
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(strings.NewReader(got.body))
		if err != nil {
			t.Fatalf("/metrics does not parse: %v", err)
		}
		return &textPage{names: familyNames(got.body), fams: fams}
	}

	before := want("before the first sample")
	if strings.Contains(before["text"], "kafka_consumer_lag{") {
		t.Errorf("lag series before the first sample:\n%s", before["text"])
	}
	steps := []struct {
		name     string
		commit   int64 // committed offset before the step, 0 = none
		sample   bool
		lag      float64 // kafka_consumer_lag after the step
		samePage bool    // the stable families read as in the step before
	}{
		{name: "first sample", sample: true, lag: 24},
		{name: "scrape again", lag: 24, samePage: true},
		{name: "commit, no sample", commit: 3, lag: 24, samePage: true},
		{name: "sample", sample: true, lag: 0},
		{name: "commit back, sample", commit: 2, sample: true, lag: 12},
		{name: "scrape again after", lag: 12, samePage: true},
	}
	last := before
	for _, st := range steps {
		if st.commit > 0 {
			e.commit(t, st.commit)
		}
		if st.sample {
			if err := e.sampler.Sample(t.Context()); err != nil {
				t.Fatalf("%s: sample: %v", st.name, err)
			}
		}
		pages := want(st.name)
		if same := maps.Equal(pages, last); same != st.samePage {
			t.Errorf("%s: page unchanged = %v, want %v:\n%s\nbefore\n%s", st.name, same, st.samePage, pages["text"], last["text"])
		}
		last = pages
		p := text(t)
		wantValue(t, p.fams, lag.MetricKafkaLag, map[string]string{"group": "billing", "topic": pageTopic}, st.lag)
		wantValue(t, p.fams, lag.MetricKafkaLagPartition, map[string]string{"group": "billing", "topic": pageTopic, "partition": "10"}, st.lag/12)
		if _, ok := testenv.Value(p.fams, "go_goroutines", nil); !ok {
			t.Errorf("%s: no go_goroutines: the registry's families are not served", st.name)
		}
		if !slices.IsSorted(p.names) || len(slices.Compact(slices.Clone(p.names))) != len(p.names) {
			t.Errorf("%s: families not sorted or repeated: %v", st.name, p.names)
		}
	}
}

// Scrapes in every format run while samples are taken (for the race
// detector); each reads a whole page of one sample.
func TestMetricsPageConcurrent(t *testing.T) {
	e := newKafkaPageEnv(t)
	var wg sync.WaitGroup
	for _, a := range accepts {
		wg.Go(func() {
			for range 5 {
				p, err := fetchPage(t.Context(), e.url, a.header, "gzip")
				if err != nil || p.status != http.StatusOK || !strings.Contains(p.body, "go_goroutines") {
					t.Errorf("Accept %s: %d %v, or a page without go_goroutines", a.name, p.status, err)
				}
			}
		})
	}
	for at := range int64(3) {
		e.commit(t, at+1)
		if err := e.sampler.Sample(t.Context()); err != nil {
			t.Errorf("sample: %v", err)
		}
	}
	wg.Wait()
	fams := scrape(t, strings.TrimSuffix(e.url, "/metrics"))
	wantValue(t, fams, lag.MetricKafkaLag, map[string]string{"group": "billing", "topic": pageTopic}, 0)
}

// A registry family with a lag family's name is served as promhttp serves
// it (by promhttp).
func TestMetricsPageNameCollision(t *testing.T) {
	dup := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: lag.MetricKafkaLag, Help: "Records a consumer group is behind on a topic (sum over partitions)."},
		[]string{"group", "topic"})
	dup.WithLabelValues("other", pageTopic).Set(7)
	e := newKafkaPageEnv(t, dup)
	if err := e.sampler.Sample(t.Context()); err != nil {
		t.Fatalf("sample: %v", err)
	}
	for _, a := range accepts {
		got := fetch(t, e.url+stableQuery(), a.header, "gzip")
		if ref := fetch(t, e.ref+stableQuery(), a.header, "gzip"); got != ref {
			t.Errorf("Accept %s: /metrics serves\n%+v\nwant\n%+v", a.name, got, ref)
		}
	}
	fams := scrape(t, strings.TrimSuffix(e.url, "/metrics"))
	wantValue(t, fams, lag.MetricKafkaLag, map[string]string{"group": "other"}, 7)
	wantValue(t, fams, lag.MetricKafkaLag, map[string]string{"group": "billing"}, 24)
}

// textPage is a whole /metrics page in text: its families in order, and
// parsed.
type textPage struct {
	names []string
	fams  map[string]*dto.MetricFamily
}

// familyNames lists the families of a text page in order, from its TYPE
// lines.
func familyNames(body string) []string {
	var out []string
	for line := range strings.Lines(body) {
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, _, _ := strings.Cut(rest, " ")
			out = append(out, name)
		}
	}
	return out
}
