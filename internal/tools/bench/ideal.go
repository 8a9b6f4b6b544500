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
	ideal, _, publish := idealOf(r.Broker, prior, f)
	if ideal <= 0 || r.Ratio <= 0 {
		return
	}
	r.Target = fmt.Sprintf("≥ 0.90 × ideal %.2f", ideal)
	r.Met = r.Ratio >= 0.9*ideal
	r.Note = fmt.Sprintf("ideal %.2f (1 ÷ (1 + %.2f + %.2f × consume ÷ publish %.0f msg/s)), %.2f × ideal; ",
		ideal, f, f, publish, r.Ratio/ideal) + r.Note
}

// idealOf returns the ideal retry ratio of brokerName (idealRetry) from
// the redrive consume and publish rows among prior, and those rows'
// rates; 0 without them.
func idealOf(brokerName string, prior []Row, f float64) (ideal, consume, publish float64) {
	for _, p := range prior {
		if p.Client != ClientRedrive || p.Broker != brokerName {
			continue
		}
		switch p.Scenario {
		case ScenarioConsume:
			consume = p.Rate
		case ScenarioPublish:
			publish = p.Rate
		}
	}
	return idealRetry(f, consume, publish), consume, publish
}

// besideRaw puts in front of r's note its rate over raw's, the raw
// client's doing the same retry work with the same guarantee: the
// broker's limit for that work, which the ideal bound only estimates;
// and, with the consume and publish rows among prior, where raw stands
// against the ideal.
func besideRaw(r *Row, raw Row, prior []Row, f float64) {
	if raw.Rate <= 0 || r.Rate <= 0 {
		return
	}
	note := fmt.Sprintf("%.2f × raw retry", r.Rate/raw.Rate)
	if ideal, consume, _ := idealOf(r.Broker, prior, f); ideal > 0 {
		note += fmt.Sprintf(" (raw: %.2f × consume, %.2f × ideal)", raw.Rate/consume, raw.Rate/consume/ideal)
	}
	r.Note = note + "; " + r.Note
}
