package lag

import (
	"time"

	"github.com/redrive/redrive/internal/timeseries"
)

// Series is the recent history of one measured series (Sampler.History):
// its name and its points, oldest first.
type Series = timeseries.Series

// Point is one sample of a Series.
type Point = timeseries.Point

// Defaults of the history a Sampler keeps.
const (
	// DefaultHistoryPoints is the SamplerConfig.HistoryPoints default:
	// 240 samples, two hours at the default interval.
	DefaultHistoryPoints = timeseries.DefaultPoints
	// DefaultHistorySeries is the SamplerConfig.HistorySeries default.
	DefaultHistorySeries = timeseries.DefaultMaxSeries
)

// History is the recent lag a Sampler measured, one point per sample
// and series, kept in memory (bounded by SamplerConfig.HistoryPoints and
// HistorySeries; a restart starts it afresh). A failed sample leaves a
// gap.
type History struct {
	// Interval is the sampler's interval.
	Interval time.Duration
	// GroupRecords is each consumer group's lag in records (the sum over
	// its topics); GroupSeconds its lag in seconds (the largest over its
	// topics, where known).
	GroupRecords, GroupSeconds []Series
	// QueueMessages is each measured queue's messages ready.
	QueueMessages []Series
}

// histories are the rings a Sampler records into.
type histories struct {
	records, seconds, depths *timeseries.History
}

func newHistories(cfg SamplerConfig) (histories, error) {
	tc := timeseries.Config{Points: cfg.HistoryPoints, MaxSeries: cfg.HistorySeries}
	var h histories
	var err error
	for _, p := range []**timeseries.History{&h.records, &h.seconds, &h.depths} {
		if *p, err = timeseries.New(tc); err != nil {
			return histories{}, err
		}
	}
	return h, nil
}

// recordGroups adds a Kafka report to the history.
func (h histories) recordGroups(rep GroupReport) {
	records, seconds := map[string]float64{}, map[string]float64{}
	for _, tl := range rep.Topics {
		records[tl.Group] += float64(tl.Lag)
		if tl.TimeLagKnown {
			seconds[tl.Group] = max(seconds[tl.Group], tl.TimeLag.Seconds())
		}
	}
	h.records.Record(rep.At, records)
	h.seconds.Record(rep.At, seconds)
}

// recordDepths adds RabbitMQ depths taken at at to the history.
func (h histories) recordDepths(at time.Time, depths []QueueDepth) {
	v := make(map[string]float64, len(depths))
	for _, d := range depths {
		if d.Exists {
			v[d.Queue] = float64(d.Messages)
		}
	}
	h.depths.Record(at, v)
}

// History returns the lag measured by the last samples (see History).
func (s *Sampler) History() History {
	return History{Interval: s.cfg.Interval, GroupRecords: s.hist.records.Series(),
		GroupSeconds: s.hist.seconds.Series(), QueueMessages: s.hist.depths.Series()}
}
