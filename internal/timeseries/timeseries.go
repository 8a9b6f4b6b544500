// Package timeseries keeps the recent history of a sampler's series in
// memory, bounded: at most MaxSeries series of at most Points points
// each, the oldest point of a series overwritten by the newest. The lag
// and heartbeat samplers record one point per series per sample, and the
// console draws the history as charts. A process restart, or another
// replica, starts with an empty history: it is a picture of the last
// hours, not a store (Prometheus is).
package timeseries

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Defaults of Config.
const (
	// DefaultPoints is the Config.Points default: 240 points, two hours
	// of 30-second samples.
	DefaultPoints = 240
	// DefaultMaxSeries is the Config.MaxSeries default.
	DefaultMaxSeries = 50
)

// Config bounds a History.
type Config struct {
	// Points is how many points each series keeps, the newest; default
	// DefaultPoints.
	Points int
	// MaxSeries is how many series the history keeps; a point of a new
	// series beyond it is dropped (and counted, History.Dropped). A
	// series that has no point in the kept window is forgotten, making
	// room. Default DefaultMaxSeries.
	MaxSeries int
}

// Validate returns nil when c is usable, else an error naming the first
// field that is not.
func (c Config) Validate() error {
	switch {
	case c.Points < 0:
		return fmt.Errorf("timeseries: Config.Points: must be >= 0, got %d", c.Points)
	case c.MaxSeries < 0:
		return fmt.Errorf("timeseries: Config.MaxSeries: must be >= 0, got %d", c.MaxSeries)
	}
	return nil
}

// Point is one sample of a series.
type Point struct {
	T time.Time
	V float64
}

// Series is the kept points of one series, oldest first.
type Series struct {
	Name   string
	Points []Point
}

// History is a bounded set of series, each a ring of points. It is safe
// for concurrent use; the zero value is not usable (New).
type History struct {
	cfg     Config
	mu      sync.Mutex
	series  map[string]*ring
	times   []time.Time // the times of the last cfg.Points Record calls
	dropped int64
}

type ring struct {
	pts  []Point // len <= cfg.Points
	next int     // where the next point goes once pts is full
}

// New returns an empty history bounded by cfg, or cfg's Validate error.
func New(cfg Config) (*History, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Points == 0 {
		cfg.Points = DefaultPoints
	}
	if cfg.MaxSeries == 0 {
		cfg.MaxSeries = DefaultMaxSeries
	}
	return &History{cfg: cfg, series: map[string]*ring{}}, nil
}

// Record adds one sample taken at t: a point for each series in values.
// Series absent from values get no point (a gap). Series that have had
// no point in the kept window are forgotten first.
func (h *History) Record(t time.Time, values map[string]float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.times = append(h.times, t)
	if len(h.times) > h.cfg.Points {
		h.times = slices.Delete(h.times, 0, len(h.times)-h.cfg.Points)
	}
	oldest := h.times[0]
	for name, r := range h.series {
		if _, ok := values[name]; !ok && r.newest().T.Before(oldest) {
			delete(h.series, name)
		}
	}
	names := make([]string, 0, len(values))
	for name := range values {
		names = append(names, name)
	}
	slices.Sort(names) // which new series fit under MaxSeries: the same every time
	for _, name := range names {
		r := h.series[name]
		if r == nil {
			if len(h.series) >= h.cfg.MaxSeries {
				h.dropped++
				continue
			}
			r = &ring{}
			h.series[name] = r
		}
		r.add(Point{T: t, V: values[name]}, h.cfg.Points)
	}
}

func (r *ring) add(p Point, size int) {
	if len(r.pts) < size {
		r.pts = append(r.pts, p)
		return
	}
	r.pts[r.next] = p
	r.next = (r.next + 1) % size
}

func (r *ring) newest() Point {
	return r.pts[(r.next-1+len(r.pts))%len(r.pts)]
}

// ordered returns a copy of r's points, oldest first.
func (r *ring) ordered() []Point {
	out := make([]Point, 0, len(r.pts))
	out = append(out, r.pts[r.next:]...)
	return append(out, r.pts[:r.next]...)
}

// Series returns a copy of every kept series, sorted by name.
func (h *History) Series() []Series {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Series, 0, len(h.series))
	for name, r := range h.series {
		out = append(out, Series{Name: name, Points: r.ordered()})
	}
	slices.SortFunc(out, func(a, b Series) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Dropped returns how many points were dropped because MaxSeries series
// were already kept.
func (h *History) Dropped() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.dropped
}
