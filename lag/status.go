package lag

import (
	"fmt"
	"slices"
	"strings"
)

// Status grades a consumer over a window of samples (see the package
// documentation for the rules).
type Status string

// Statuses, from best to worst (see [Status.Rank]).
const (
	StatusOK     Status = "OK"
	StatusWarn   Status = "WARN"
	StatusRewind Status = "REWIND"
	StatusStall  Status = "STALL"
	StatusStop   Status = "STOP"
)

// statusOrder lists the statuses from best to worst.
var statusOrder = []Status{StatusOK, StatusWarn, StatusRewind, StatusStall, StatusStop}

// Rank orders statuses: OK 0, WARN 1, REWIND 2, STALL 3, STOP 4 (and
// anything else, as STOP).
func (s Status) Rank() int {
	if i := slices.Index(statusOrder, s); i >= 0 {
		return i
	}
	return len(statusOrder) - 1
}

// Label is the lower-case form used as a Prometheus label value.
func (s Status) Label() string { return strings.ToLower(string(s)) }

// point is one sample of one partition.
type point struct {
	committed int64
	lag       int64
	assigned  bool
}

// grade applies the rules to a window, oldest first, latest last.
func grade(w []point) (Status, string) {
	last := w[len(w)-1]
	for i := 1; i < len(w); i++ {
		if prev, cur := w[i-1].committed, w[i].committed; prev >= 0 && cur >= 0 && cur < prev {
			return StatusRewind, fmt.Sprintf("committed offset went back from %d to %d", prev, cur)
		}
	}
	if last.lag == 0 {
		return StatusOK, ""
	}
	still := true
	for _, p := range w {
		if p.committed != w[0].committed {
			still = false
			break
		}
	}
	if still {
		switch {
		case !last.assigned:
			return StatusStop, fmt.Sprintf("no consumer assigned; committed offset %s not moving, lag %d", offset(last.committed), last.lag)
		case len(w) >= 2:
			return StatusStall, fmt.Sprintf("committed offset %s not moving over %d samples while lag is %d", offset(last.committed), len(w), last.lag)
		}
		return StatusOK, ""
	}
	if len(w) >= 2 && w[0].lag > 0 && last.lag > w[0].lag {
		growing := true
		for i := 1; i < len(w); i++ {
			if w[i].lag <= 0 || w[i].lag < w[i-1].lag {
				growing = false
				break
			}
		}
		if growing {
			return StatusWarn, fmt.Sprintf("lag growing from %d to %d over %d samples", w[0].lag, last.lag, len(w))
		}
	}
	return StatusOK, ""
}

func offset(o int64) string {
	if o < 0 {
		return "none"
	}
	return fmt.Sprint(o)
}
