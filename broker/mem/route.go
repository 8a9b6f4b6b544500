package mem

import "github.com/redrive/redrive/broker/driver"

// Router is the in-memory broker's driver.Router: each worker has its
// own DLQ (DLQName) and its replays go to its own queue (QueueName), the
// one it consumes.
type Router struct{}

// Route implements driver.Router.
func (Router) Route(topic, worker string) driver.Route {
	q := QueueName(topic, worker)
	return driver.Route{DLQ: DLQName(topic, worker), Topic: topic, Worker: worker, Target: q, Sources: []string{q}}
}

// ForeignWorkerRoute implements driver.Router: a worker declared foreign
// consumes its queue as any other, so its route is Route's.
func (r Router) ForeignWorkerRoute(topic, worker string) driver.Route { return r.Route(topic, worker) }
