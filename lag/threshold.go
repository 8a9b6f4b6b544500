package lag

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidConfig is wrapped by the Validate errors of this package.
var ErrInvalidConfig = errors.New("lag: invalid config")

// Threshold is a topic's lag thresholds in records: WARNING above Warning,
// CRITICAL above Critical. A zero level is off.
type Threshold struct {
	Warning  int64
	Critical int64
}

// Thresholds maps a topic to its thresholds.
type Thresholds map[string]Threshold

// Level is a topic's lag graded against its thresholds.
type Level string

// Levels.
const (
	LevelOK       Level = "OK"
	LevelWarning  Level = "WARNING"
	LevelCritical Level = "CRITICAL"
)

// Label is the lower-case form used as a Prometheus label value.
func (l Level) Label() string { return strings.ToLower(string(l)) }

// Level grades lag records behind on topic; topics without thresholds are
// OK.
func (t Thresholds) Level(topic string, lag int64) Level {
	th, ok := t[topic]
	switch {
	case !ok:
		return LevelOK
	case th.Critical > 0 && lag > th.Critical:
		return LevelCritical
	case th.Warning > 0 && lag > th.Warning:
		return LevelWarning
	}
	return LevelOK
}

// Validate reports the first problem, naming the topic.
func (t Thresholds) Validate() error {
	for topic, th := range t {
		switch {
		case th.Warning < 0 || th.Critical < 0:
			return fmt.Errorf("%w: thresholds of %q are negative", ErrInvalidConfig, topic)
		case th.Warning > 0 && th.Critical > 0 && th.Critical < th.Warning:
			return fmt.Errorf("%w: thresholds of %q: critical %d is below warning %d", ErrInvalidConfig, topic, th.Critical, th.Warning)
		}
	}
	return nil
}
