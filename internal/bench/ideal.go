package bench

import "fmt"

// retryFraction is the fraction of messages the retry scenario's handler
// fails once (every 10th).
const retryFraction = 0.1

// idealRetry is the best retry/consume ratio a consumer can reach when a
// fraction f of the messages fails once: each of those costs one more
// delivery and one confirmed publish of its retry copy, so n messages
// take n(1+f)/consume + n·f/publish seconds of the broker's work instead
// of n/consume: 1 / (1 + f + f·consume/publish).
func idealRetry(f, consume, publish float64) float64 {
	if consume <= 0 || publish <= 0 {
		return 0
	}
	return 1 / (1 + f + f*consume/publish)
}

// gradeIdeal grades a retry row against the ideal bound computed from the
// same run's redrive consume and publish rows of its broker (issue 19:
// ≥ 0.9 × the ideal), and says both in its note. Without those rows the
// row keeps its plain ratio target.
func gradeIdeal(r *Row, prior []Row, f float64) {
	var consume, publish float64
	for _, p := range prior {
		if p.Client != ClientRedrive || p.Broker != r.Broker {
			continue
		}
		switch p.Scenario {
		case ScenarioConsume:
			consume = p.Rate
		case ScenarioPublish:
			publish = p.Rate
		}
	}
	ideal := idealRetry(f, consume, publish)
	if ideal <= 0 || r.Ratio <= 0 {
		return
	}
	r.Target = fmt.Sprintf("≥ 0.90 × ideal %.2f", ideal)
	r.Met = r.Ratio >= 0.9*ideal
	r.Note = fmt.Sprintf("ideal %.2f (1 ÷ (1 + %.2f + %.2f × consume ÷ publish %.0f msg/s)), %.2f × ideal; ",
		ideal, f, f, publish, r.Ratio/ideal) + r.Note
}
