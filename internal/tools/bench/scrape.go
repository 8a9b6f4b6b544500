package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/internal/assembly/exporter"
	"github.com/redrive/redrive/lag"
)

// scrapeTopicPartitions is the partition count of each topic of the scrape
// scenario: ScrapePartitions are spread over topics of this many.
const scrapeTopicPartitions = 100

// scrape: the exporter as `redrive exporter` builds it for Kafka (a lag
// sampler of the configured groups with a tracker, Go and process
// metrics), over ScrapeGroups groups that each committed an offset on every
// one of ScrapePartitions partitions (one record of lag each). A lag sample
// is taken, the page scraped once and sampled again (the steady state: the
// sampler encodes and compresses the formats scraped before), then the
// whole /metrics page is fetched over HTTP (gzip, as Prometheus asks)
// Scrapes times; p50/p99 are per scrape, to the last compressed byte (the
// exporter's part); the note gives them with the client's gunzip too,
// measured over as many more scrapes.
func (e *kafkaEnv) scrape(ctx context.Context) ([]Row, error) {
	groups, parts := e.cfg.ScrapeGroups, e.cfg.ScrapePartitions
	e.progress(ScenarioScrape, ClientRedrive)

	// Topics of up to scrapeTopicPartitions partitions, two records each.
	var topics []string
	for i := 0; i*scrapeTopicPartitions < parts; i++ {
		n := min(scrapeTopicPartitions, parts-i*scrapeTopicPartitions)
		t := e.prefix + ".scrape." + strconv.Itoa(i)
		e.topics = append(e.topics, t)
		resp, err := e.adm.CreateTopics(ctx, int32(n), -1, nil, t)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			return nil, fmt.Errorf("create topic %s: %w", t, err)
		}
		topics = append(topics, t)
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(e.brokers...), kgo.ClientID("scrape-bench"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		return nil, fmt.Errorf("producer: %w", err)
	}
	defer prod.Close()
	offsets := kadm.Offsets{}
	var recs []*kgo.Record
	for i, t := range topics {
		n := min(scrapeTopicPartitions, parts-i*scrapeTopicPartitions)
		for p := range int32(n) {
			for range 2 {
				recs = append(recs, &kgo.Record{Topic: t, Partition: p, Value: []byte("x")})
			}
			offsets.Add(kadm.Offset{Topic: t, Partition: p, At: 1, LeaderEpoch: -1})
		}
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return nil, fmt.Errorf("produce: %w", err)
	}
	names := make([]string, groups)
	for g := range names {
		names[g] = e.prefix + ".scrape-group-" + strconv.Itoa(g)
		resp, err := e.adm.CommitOffsets(ctx, names[g], offsets)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			return nil, fmt.Errorf("commit offsets of %s: %w", names[g], err)
		}
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_, _ = e.adm.DeleteGroups(dctx, names...)
	}()

	// The exporter, wired as cmd/redrive's newMonitoring does for Kafka.
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.brokers...), kgo.ClientID("scrape-bench-exporter"))
	if err != nil {
		return nil, fmt.Errorf("exporter client: %w", err)
	}
	defer cl.Close()
	k, err := kafka.NewLagMonitor(cl, kafka.LagConfig{Groups: names})
	if err != nil {
		return nil, err
	}
	tr, err := lag.NewTracker(lag.TrackerConfig{})
	if err != nil {
		return nil, err
	}
	s, err := lag.NewSampler(lag.SamplerConfig{Monitor: k, Source: kafka.Name, Tracker: tr, Logger: e.cfg.Logger})
	if err != nil {
		return nil, err
	}
	srv, err := exporter.New(exporter.Config{Broker: "kafka", Lag: s, Logger: e.cfg.Logger})
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	if err := s.Sample(ctx); err != nil {
		return nil, fmt.Errorf("lag sample: %w", err)
	}
	sampleTook := time.Since(t0)
	rep, err := s.LastGroups()
	if err != nil {
		return nil, fmt.Errorf("lag sample: %w", err)
	}
	if got := len(rep.Partitions); got != groups*parts {
		return nil, fmt.Errorf("lag sample has %d partitions, want %d", got, groups*parts)
	}

	// The steady state: a scrape's format is encoded and compressed by
	// the sampler, from the sample after its first scrape on.
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	if _, err := get(ctx, hs.URL+"/metrics"); err != nil {
		return nil, fmt.Errorf("warm-up scrape: %w", err)
	}
	if err := s.Sample(ctx); err != nil {
		return nil, fmt.Errorf("lag sample: %w", err)
	}
	m := startMeter()
	lat, size, err := timeScrapes(ctx, e.cfg.Scrapes, hs.URL+"/metrics", getGzip)
	if err != nil {
		return nil, err
	}
	el, u := m.stop()
	// The same scrapes decompressed as they arrive, as a scraper does:
	// its CPU (the gunzip of the whole page) in the same process.
	full, plain, err := timeScrapes(ctx, e.cfg.Scrapes, hs.URL+"/metrics", get)
	if err != nil {
		return nil, err
	}
	fullRow := Row{}.withLatencies(full)
	r := row(ScenarioScrape, Kafka, ClientRedrive, groups*parts, el, u).withLatencies(lat)
	r.Rate = 0 // per scrape, not a message rate
	r.Target = "p99 ≤ 100ms"
	r.Met = r.P99 <= 100*time.Millisecond
	r.Note = fmt.Sprintf("%d groups × %d partitions (messages = partition lags), %d scrapes of %.1f MB gzip (%.1f MB of text; p50/p99 %s/%s with the client's gunzip); lag sample took %s; CPU and allocs per partition lag per scrape",
		groups, parts, e.cfg.Scrapes, float64(size)/1e6, float64(plain)/1e6, dur(fullRow.P50), dur(fullRow.P99), sampleTook.Round(time.Millisecond))
	r = r.perCheck(e.cfg.Scrapes)
	return []Row{r}, nil
}

// timeScrapes fetches url n times with fetch and returns each fetch's
// latency and the last body's size.
func timeScrapes(ctx context.Context, n int, url string, fetch func(context.Context, string) (int64, error)) ([]time.Duration, int64, error) {
	lat := make([]time.Duration, 0, n)
	var size int64
	for range n {
		t0 := time.Now()
		b, err := fetch(ctx, url)
		if err != nil {
			return nil, 0, fmt.Errorf("scrape: %w", err)
		}
		lat = append(lat, time.Since(t0))
		size = b
	}
	return lat, size, nil
}

// getGzip fetches url asking for gzip, as Prometheus does, and returns the
// size of the compressed body, read to its end but not decompressed: the
// exporter's part of a scrape.
func getGzip(ctx context.Context, url string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept-Encoding", "gzip") // set by hand: not decompressed
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if err == nil && resp.Header.Get("Content-Encoding") != "gzip" {
		err = fmt.Errorf("GET %s: not gzip-encoded", url)
	}
	return n, err
}

// get fetches url (gzip, decompressed by the client) and returns the
// body's size.
func get(ctx context.Context, url string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return n, err
}
