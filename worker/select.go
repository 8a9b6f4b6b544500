package worker

import (
	"fmt"
	"slices"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/internal/assembly/config"
)

// selectWorkers returns the subscriptions of the configured workers named
// in names (Config.Workers), or of every worker without an endpoint when
// names is empty. A foreign worker (workers[].foreign) is never run: its
// consumer is another program's.
func selectWorkers(file *config.Config, names []string) ([]broker.Subscription, error) {
	all := file.Subscriptions()
	var subs []broker.Subscription
	for i, w := range file.Workers {
		if !w.Foreign && ((len(names) == 0 && w.Endpoint == nil) || slices.Contains(names, w.Name)) {
			subs = append(subs, all[i])
		}
	}
	for _, name := range names {
		i := slices.IndexFunc(file.Workers, func(w config.Worker) bool { return w.Name == name })
		switch {
		case i < 0:
			return nil, fmt.Errorf("%w: Config.Workers names %q", ErrNoWorker, name)
		case file.Workers[i].Foreign:
			return nil, fmt.Errorf("%w: Config.Workers names %q, a foreign worker (workers[].foreign: another program consumes for it)", ErrNoWorker, name)
		}
	}
	return subs, nil
}
