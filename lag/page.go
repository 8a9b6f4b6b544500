package lag

import (
	"bytes"
	"cmp"
	"compress/flate"
	"hash/crc32"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// A new page is encoded at once, before it is published, in the
// exposition formats scraped within the last warmSamples samples, at most
// maxWarmFormats of them (the most recently scraped first): in the steady
// state a scrape finds its page encoded, and the encoding is done by the
// sampler, not by the scrape.
const (
	maxWarmFormats = 4
	warmSamples    = 10
)

// page is the metric families of one sample: built once by rebuild,
// read-only afterwards, encoded lazily once per exposition format.
type page struct {
	gen  uint64
	fams []*dto.MetricFamily

	mu  sync.Mutex
	enc map[expfmt.Format]*encoded
}

// encoded is a page in one exposition format.
type encoded struct {
	once      sync.Once
	fams      []EncodedFamily
	err       error
	requested atomic.Bool // by Encoded, not only encoded ahead
}

// EncodedFamily is one metric family encoded by itself in an exposition
// format, as expfmt.Encoder.Encode writes it (for OpenMetrics, without the
// final "# EOF" line, which the encoder's Close writes).
type EncodedFamily struct {
	Name string
	Data []byte
	// Deflated is Data compressed at DeflateLevel as raw DEFLATE blocks
	// that refer to nothing before them and end in a sync flush (byte
	// aligned, not final): a gzip response can splice it between other
	// such blocks, so that a page is compressed once per sample, not per
	// scrape. CRC is Data's CRC-32 (IEEE), for the gzip trailer.
	Deflated []byte
	CRC      uint32
}

// DeflateLevel is the compression level of EncodedFamily.Deflated. A page
// of 100,000 lag series is 12 MB of text: level 6 (promhttp's) takes ~55 ms
// of CPU to make 311 kB of it, level 2 ~13 ms to make 338 kB.
const DeflateLevel = 2

// Gather implements prometheus.Gatherer: the metric families of the last
// samples, built once per sample, sorted as prometheus.Registry.Gather
// sorts them (families by name, series by label values) and without empty
// families; nil before the first sample. They are shared by every caller
// until the next sample and must not be modified.
func (s *Sampler) Gather() ([]*dto.MetricFamily, error) {
	return s.page.Load().fams, nil
}

// Encoded returns the families of Gather encoded in format, one
// EncodedFamily each in the same order, and the generation of the sample
// they come from, which changes with each sample. They are encoded once
// per sample and format, and at once for the formats that were asked for
// the sample before. The data is shared and must not be modified.
func (s *Sampler) Encoded(format expfmt.Format) ([]EncodedFamily, uint64, error) {
	p := s.page.Load()
	e := p.encoding(format)
	e.requested.Store(true)
	e.once.Do(func() { e.fams, e.err = encode(p.fams, format) })
	return e.fams, p.gen, e.err
}

func (p *page) encoding(format expfmt.Format) *encoded {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.enc[format]
	if e == nil {
		e = &encoded{}
		p.enc[format] = e
	}
	return e
}

func encode(fams []*dto.MetricFamily, format expfmt.Format) ([]EncodedFamily, error) {
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, format)
	ends := make([]int, len(fams))
	for i, f := range fams {
		if err := enc.Encode(f); err != nil {
			return nil, err
		}
		ends[i] = buf.Len()
	}
	data := bytes.Clone(buf.Bytes()) // no spare capacity kept for a sample's life
	out := make([]EncodedFamily, len(fams))
	var z bytes.Buffer
	zw, err := flate.NewWriter(&z, DeflateLevel)
	if err != nil {
		return nil, err
	}
	start := 0
	for i, f := range fams {
		d := data[start:ends[i]:ends[i]]
		zw.Reset(&z) // no reference to the family before
		if _, err := zw.Write(d); err != nil {
			return nil, err
		}
		if err := zw.Flush(); err != nil {
			return nil, err
		}
		out[i] = EncodedFamily{Name: f.GetName(), Data: d, CRC: crc32.ChecksumIEEE(d)}
		start = ends[i]
		ends[i] = z.Len() // now the end of the family's deflated blocks
	}
	deflated := bytes.Clone(z.Bytes())
	start = 0
	for i := range out {
		out[i].Deflated = deflated[start:ends[i]:ends[i]]
		start = ends[i]
	}
	return out, nil
}

// rebuild turns the cached samples into a new page, encodes it in the
// formats recently scraped, and publishes it.
func (s *Sampler) rebuild() {
	s.buildMu.Lock()
	defer s.buildMu.Unlock()
	s.mu.RLock()
	fams := s.families()
	s.mu.RUnlock()
	prev := s.page.Load()
	p := &page{gen: prev.gen + 1, fams: fams, enc: map[expfmt.Format]*encoded{}}
	prev.mu.Lock()
	for f, e := range prev.enc {
		if e.requested.Load() {
			s.scraped[f] = prev.gen
		}
	}
	prev.mu.Unlock()
	var warm []expfmt.Format
	for f, gen := range s.scraped {
		if gen+warmSamples <= prev.gen {
			delete(s.scraped, f)
			continue
		}
		warm = append(warm, f)
	}
	slices.SortFunc(warm, func(a, b expfmt.Format) int {
		return cmp.Or(cmp.Compare(s.scraped[b], s.scraped[a]), cmp.Compare(a, b))
	})
	for _, f := range warm[:min(len(warm), maxWarmFormats)] {
		e := p.encoding(f)
		e.once.Do(func() { e.fams, e.err = encode(p.fams, f) })
	}
	s.page.Store(p)
}

// families builds the metric families of the cached samples; s.mu is held
// for reading.
func (s *Sampler) families() []*dto.MetricFamily {
	b := newFamilyBuilder()
	lagF := b.family(MetricKafkaLag)
	partF := b.family(MetricKafkaLagPartition)
	secondsF := b.family(MetricKafkaLagSeconds)
	statusF := b.family(MetricConsumerStatus)
	depthF := b.family(MetricQueueDepth)
	consF := b.family(MetricQueueConsumers)
	upF := b.family(MetricUp)
	if s.groupsOnce || s.depthsOnce {
		b.add(upF, boolFloat(s.lastErr() == nil), "source", s.cfg.Source)
	}
	if s.groupMon != nil && s.groupsOnce {
		for _, t := range s.groups.Topics {
			if t.Errors == t.Partitions {
				continue
			}
			b.add(lagF, float64(t.Lag), "group", t.Group, "topic", t.Topic)
			if t.TimeLagKnown {
				b.add(secondsF, t.TimeLag.Seconds(), "group", t.Group, "topic", t.Topic)
			}
			b.add(statusF, 1, "group", t.Group, "level", t.Level.Label(), "status", t.Status.Label(), "topic", t.Topic)
		}
		partF.Metric = make([]*dto.Metric, 0, len(s.groups.Partitions))
		for _, p := range s.groups.Partitions {
			if p.Err == nil {
				b.add(partF, float64(p.Lag), "group", p.Group, "partition", b.partition(p.Partition), "topic", p.Topic)
			}
		}
	}
	if s.depthMon != nil && s.depthsOnce {
		for _, d := range s.depths {
			if d.Exists {
				b.add(depthF, float64(d.Messages), "queue", d.Queue)
				b.add(consF, float64(d.Consumers), "queue", d.Queue)
			}
		}
	}
	var out []*dto.MetricFamily
	for _, f := range []*dto.MetricFamily{lagF, partF, secondsF, statusF, depthF, consF, upF} {
		if len(f.Metric) > 0 {
			sortSeries(f)
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b *dto.MetricFamily) int { return cmp.Compare(a.GetName(), b.GetName()) })
	return out
}

// familyBuilder builds families whose series share their label pairs
// and values: a page of 100,000 partition series has a few thousand
// distinct ones.
type familyBuilder struct {
	strs   map[string]*string
	pairs  map[[2]string]*dto.LabelPair
	gauges map[float64]*dto.Gauge
	parts  []string // strconv.Itoa(i) at i
	gauge  dto.MetricType
}

func newFamilyBuilder() *familyBuilder {
	return &familyBuilder{strs: map[string]*string{}, pairs: map[[2]string]*dto.LabelPair{}, gauges: map[float64]*dto.Gauge{}, gauge: dto.MetricType_GAUGE}
}

func (b *familyBuilder) str(v string) *string {
	p := b.strs[v]
	if p == nil {
		p = &v
		b.strs[v] = p
	}
	return p
}

func (b *familyBuilder) pair(name, value string) *dto.LabelPair {
	k := [2]string{name, value}
	p := b.pairs[k]
	if p == nil {
		p = &dto.LabelPair{Name: b.str(name), Value: b.str(value)}
		b.pairs[k] = p
	}
	return p
}

func (b *familyBuilder) value(v float64) *dto.Gauge {
	if v != v { // NaN: no map key
		return &dto.Gauge{Value: &v}
	}
	g := b.gauges[v]
	if g == nil {
		g = &dto.Gauge{Value: &v}
		b.gauges[v] = g
	}
	return g
}

func (b *familyBuilder) partition(n int32) string {
	if n < 0 || n > 1<<16 {
		return strconv.Itoa(int(n))
	}
	for i := len(b.parts); i <= int(n); i++ {
		b.parts = append(b.parts, strconv.Itoa(i))
	}
	return b.parts[n]
}

func (b *familyBuilder) family(name string) *dto.MetricFamily {
	return &dto.MetricFamily{Name: b.str(name), Help: b.str(metricHelp[name]), Type: &b.gauge}
}

// add appends a gauge series to f; labels are name, value pairs sorted by
// name, as prometheus.NewConstMetric sorts them. A series with a label
// value that is not UTF-8 is left out, as a registry leaves it out.
func (b *familyBuilder) add(f *dto.MetricFamily, v float64, labels ...string) {
	for i := 1; i < len(labels); i += 2 {
		if !utf8.ValidString(labels[i]) {
			return
		}
	}
	m := &dto.Metric{Label: make([]*dto.LabelPair, len(labels)/2), Gauge: b.value(v)}
	for i := range m.Label {
		m.Label[i] = b.pair(labels[2*i], labels[2*i+1])
	}
	f.Metric = append(f.Metric, m)
}

// sortSeries sorts f's series by label values as prometheus.Registry does
// and drops the repeats of a label set (the registry reports a repeat as
// an error and drops it), keeping the first.
func sortSeries(f *dto.MetricFamily) {
	slices.SortStableFunc(f.Metric, compareSeries)
	f.Metric = slices.CompactFunc(f.Metric, func(a, b *dto.Metric) bool { return compareSeries(a, b) == 0 })
}

func compareSeries(a, b *dto.Metric) int {
	if c := cmp.Compare(len(a.Label), len(b.Label)); c != 0 {
		return c
	}
	for i, l := range a.Label {
		if c := cmp.Compare(l.GetValue(), b.Label[i].GetValue()); c != 0 {
			return c
		}
	}
	return 0
}
