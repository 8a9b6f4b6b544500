package daemon

import (
	"context"
	"errors"
	"testing"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/internal/assembly/config"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// noMonitorRouter names one DLQ per worker.
type noMonitorRouter struct{}

func (noMonitorRouter) Route(topic, worker string) driver.Route {
	return driver.Route{DLQ: topic + "." + worker + ".dlq", Topic: topic, Worker: worker, Target: topic + "." + worker}
}
func (r noMonitorRouter) ForeignWorkerRoute(topic, worker string) driver.Route {
	return r.Route(topic, worker)
}

// A backend that measures no lag (its descriptor has no Monitor, as an
// in-memory one may) still runs under serve: the exporter and the
// console have no lag component, the rest is there. It is named by
// broker: like any registered backend, with no section of its own.
func TestBackendWithoutMonitor(t *testing.T) {
	if _, ok := driver.Lookup("test-no-monitor"); !ok { // once per process (-count)
		driver.Register(driver.Descriptor{Name: "test-no-monitor", Router: noMonitorRouter{},
			Open: func(context.Context, driver.Settings) (broker.Broker, error) {
				return nil, errors.New("not opened here")
			}})
	}
	c, err := config.Parse([]byte("broker: test-no-monitor\nredis: {addr: " + testenv.Redis.URL() + "}\nadmin: {token: a-token-of-sixteen-chars}\n" +
		"workers: [{name: billing, topic: orders}]\n"))
	if err != nil {
		t.Fatalf("a registered backend without a section: %v", err)
	}
	d, err := New(c, Options{Listen: "127.0.0.1:0", MetricsListen: "127.0.0.1:0"}, nil)
	if err != nil {
		t.Fatalf("New with a backend that measures no lag: %v", err)
	}
	defer d.Close()
	if d.mon.lag != nil || d.mon.cfg.Lag != nil {
		t.Error("a lag sampler without a monitor")
	}
	if d.mon.heartbeats == nil {
		t.Error("no heartbeat sampler")
	}
	if got := d.policies["orders.billing.dlq"]; got.Severity == "" {
		t.Errorf("the backend's DLQ is not kept: %v", d.policies)
	}
}
