package heartbeat

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// Bounds of what a heartbeat may say about an endpoint: a value read from
// Redis is anyone's, and a larger one makes the heartbeat malformed.
const (
	MaxEndpointURL      = 512 // bytes of Endpoint.URL
	MaxEndpointOutcomes = 16  // entries of Endpoint.Outcomes
	maxOutcomeName      = 32  // bytes of an outcome's name
)

// Endpoint is what an instance of redrive relay says in its heartbeats
// about the HTTP endpoint it delivers its worker's messages to: where,
// and how its POSTs went since the instance started. Heartbeats of other
// workers have none (Heartbeat.Endpoint is nil).
type Endpoint struct {
	// URL is the endpoint's address without user information, query or
	// fragment.
	URL string
	// Outcomes counts the instance's POSTs by outcome (package relay
	// names them: success, permanent, retry_after, retry, timeout,
	// unreachable, canceled).
	Outcomes map[string]int64
	// P50 and P99 are the POSTs' latency quantiles, estimated from a
	// histogram; zero before the first POST.
	P50, P99 time.Duration
}

type endpointJSON struct {
	URL      string           `json:"url"`
	Outcomes map[string]int64 `json:"outcomes"`
	P50      float64          `json:"p50_ms"`
	P99      float64          `json:"p99_ms"`
}

// MarshalJSON writes {"url", "outcomes", "p50_ms", "p99_ms"}.
func (e Endpoint) MarshalJSON() ([]byte, error) {
	return json.Marshal(endpointJSON{URL: e.URL, Outcomes: e.Outcomes, P50: ms(e.P50), P99: ms(e.P99)})
}

// UnmarshalJSON reads the wire form and checks its bounds.
func (e *Endpoint) UnmarshalJSON(data []byte) error {
	var w endpointJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	switch {
	case len(w.URL) > MaxEndpointURL:
		return fmt.Errorf("endpoint.url: %d bytes, more than %d", len(w.URL), MaxEndpointURL)
	case len(w.Outcomes) > MaxEndpointOutcomes:
		return fmt.Errorf("endpoint.outcomes: %d entries, more than %d", len(w.Outcomes), MaxEndpointOutcomes)
	}
	for name, n := range w.Outcomes {
		if len(name) > maxOutcomeName || n < 0 {
			return fmt.Errorf("endpoint.outcomes: an entry of %d bytes or a negative count", len(name))
		}
	}
	p50, err := fromMS("p50_ms", w.P50)
	if err != nil {
		return err
	}
	p99, err := fromMS("p99_ms", w.P99)
	if err != nil {
		return err
	}
	*e = Endpoint{URL: w.URL, Outcomes: w.Outcomes, P50: p50, P99: p99}
	return nil
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

// fromMS reads a latency in milliseconds: finite, >= 0, at most a day.
func fromMS(field string, v float64) (time.Duration, error) {
	if !(v >= 0 && v <= float64(24*time.Hour/time.Millisecond)) {
		return 0, fmt.Errorf("endpoint.%s: %g is not between 0 and a day", field, v)
	}
	return time.Duration(v * float64(time.Millisecond)), nil
}
