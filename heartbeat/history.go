package heartbeat

import (
	"slices"
	"time"

	"github.com/redrive/redrive/internal/timeseries"
)

// Series is the recent history of one series (Sampler.History): its name
// and its points, oldest first.
type Series = timeseries.Series

// Point is one sample of a Series.
type Point = timeseries.Point

// DefaultHistoryPoints is the SamplerConfig.HistoryPoints default: 480
// samples, two hours at the default interval.
const DefaultHistoryPoints = 480

// Chart states: what an instance counts as in the history, one each, in
// this order (see ChartState).
const (
	StateOK       = "OK"
	StateWarning  = "WARNING"
	StateCritical = "CRITICAL"
	StateMissing  = "MISSING"
	StatePaused   = "PAUSED"
	StateUnknown  = "UNKNOWN"
)

// ChartStates are the states of History, in drawing order.
var ChartStates = []string{StateOK, StateWarning, StateCritical, StateMissing, StatePaused, StateUnknown}

// ChartState returns the one state w counts as in the history: PAUSED
// when it is paused, MISSING when it is missing, else its severity.
func (w WorkerStatus) ChartState() string {
	switch {
	case w.Paused():
		return StatePaused
	case slices.Contains(w.Conditions, ConditionMissing):
		return StateMissing
	case w.Severity == SeverityOK, w.Severity == SeverityWarning, w.Severity == SeverityCritical:
		return string(w.Severity)
	default:
		return StateUnknown
	}
}

// History is the recent count of worker instances by state, one point
// per sample and state (every state, 0 included), kept in memory
// (SamplerConfig.HistoryPoints points per state; a restart starts it
// afresh). A sample that cannot read Redis adds nothing: a gap.
type History struct {
	// Interval is the sampler's interval.
	Interval time.Duration
	// States has one series per state of ChartStates, in that order.
	States []Series
}

// recordHistory adds the instances of rows, by state, to the history.
func (s *Sampler) recordHistory(at time.Time, rows []WorkerStatus) {
	v := make(map[string]float64, len(ChartStates))
	for _, st := range ChartStates {
		v[st] = 0
	}
	for _, r := range rows {
		v[r.ChartState()]++
	}
	s.hist.Record(at, v)
}

// History returns the instances by state of the last samples.
func (s *Sampler) History() History {
	byName := map[string]Series{}
	for _, sr := range s.hist.Series() {
		byName[sr.Name] = sr
	}
	h := History{Interval: s.cfg.Interval}
	for _, st := range ChartStates {
		if sr, ok := byName[st]; ok {
			h.States = append(h.States, sr)
		}
	}
	return h
}
