package driver

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redrive/redrive/broker"
)

// testRouter names a DLQ per worker.
type testRouter struct{}

func (testRouter) Route(topic, worker string) Route {
	return Route{DLQ: topic + "." + worker + ".dlq", Topic: topic, Worker: worker, Target: topic + "." + worker}
}
func (r testRouter) ForeignWorkerRoute(topic, worker string) Route { return r.Route(topic, worker) }

func openNothing(context.Context, Settings) (broker.Broker, error) {
	return nil, errors.New("nothing to open")
}

// runs counts TestRegistry's runs in this process.
var runs int

// Register refuses what is a backend's programming error, Lookup and
// Names find what was registered, and WordsOf fills what a backend left
// out.
func TestRegistry(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    Descriptor
		want string
	}{
		{"no name", Descriptor{Open: openNothing, Router: testRouter{}}, "name"},
		{"a name of capitals", Descriptor{Name: "Memory", Open: openNothing, Router: testRouter{}}, "name"},
		{"a name too long", Descriptor{Name: strings.Repeat("m", 33), Open: openNothing, Router: testRouter{}}, "name"},
		{"no Open", Descriptor{Name: "test-no-open", Router: testRouter{}}, "Open"},
		{"no Router", Descriptor{Name: "test-no-router", Open: openNothing}, "Router"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), tc.want) {
					t.Errorf("Register = panic %v, want one naming %s", r, tc.want)
				}
			}()
			Register(tc.d)
		})
	}
	runs++ // a name of this run's own: -count runs the test again in one process
	name := "test-registry-" + strconv.Itoa(runs)
	Register(Descriptor{Name: name, Open: openNothing, Router: testRouter{}, Words: Words{Unit: "stream"}})
	d, ok := Lookup(name)
	if !ok || d.Name != name || d.Router.Route("t", "w").DLQ != "t.w.dlq" {
		t.Fatalf("Lookup(%q) = %+v, %v", name, d, ok)
	}
	if !slices.Contains(Names(), name) || !slices.IsSorted(Names()) {
		t.Errorf("Names() = %v, want it sorted and with %q", Names(), name)
	}
	if _, ok := Lookup("never-registered"); ok {
		t.Error("Lookup found a backend never registered")
	}
	func() {
		defer func() {
			if r := recover(); r == nil {
				t.Error("a second Register of one name did not panic")
			}
		}()
		Register(Descriptor{Name: name, Open: openNothing, Router: testRouter{}})
	}()
	if w := WordsOf(name); w != (Words{Display: name, Unit: "stream", EveryGroup: DefaultWords.EveryGroup}) {
		t.Errorf("WordsOf(%q) = %+v", name, w)
	}
	if w := WordsOf("never-registered"); w.Unit != DefaultWords.Unit || w.Display != "never-registered" {
		t.Errorf("WordsOf(an unregistered name) = %+v", w)
	}
	rt := Route{Target: "orders.billing", Worker: "billing"}
	if got := rt.Destination(name); got != "stream orders.billing (worker billing)" {
		t.Errorf("Destination in the backend's words = %q", got)
	}
}

// myConfig stands for a backend's Config.
type myConfig struct{ URL string }

// ConfigAs gives a backend its own Config, its defaults when the program
// has none, and refuses another backend's.
func TestConfigAs(t *testing.T) {
	if c, err := ConfigAs[myConfig](Settings{}); err != nil || c != (myConfig{}) {
		t.Errorf("no Config: %+v, %v", c, err)
	}
	if c, err := ConfigAs[myConfig](Settings{Config: myConfig{URL: "u"}}); err != nil || c.URL != "u" {
		t.Errorf("a value: %+v, %v", c, err)
	}
	if c, err := ConfigAs[myConfig](Settings{Config: &myConfig{URL: "p"}}); err != nil || c.URL != "p" {
		t.Errorf("a pointer: %+v, %v", c, err)
	}
	if _, err := ConfigAs[myConfig](Settings{Config: "another backend's"}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("another type: %v, want ErrInvalidConfig", err)
	}
}

// A backend's sentinel keeps its text and matches the driver's kind.
func TestNewError(t *testing.T) {
	mine := NewError("nats: invalid config", ErrInvalidConfig)
	err := errors.Join(errors.New("x"), mine)
	if !errors.Is(err, mine) || !errors.Is(err, ErrInvalidConfig) || errors.Is(err, ErrRemoveRefused) {
		t.Errorf("errors.Is on %v: mine %v, kind %v, other kind %v", err, errors.Is(err, mine), errors.Is(err, ErrInvalidConfig), errors.Is(err, ErrRemoveRefused))
	}
	if mine.Error() != "nats: invalid config" {
		t.Errorf("Error() = %q", mine.Error())
	}
	if !QueueRole("").ExpectsConsumer() || RoleDelay.ExpectsConsumer() || RoleUnroutable.ExpectsConsumer() || !RoleDLQ.ExpectsConsumer() {
		t.Error("ExpectsConsumer: only delay and parking queues have no consumer by design (an unknown role is assumed to)")
	}
	if ValidName("") || ValidName("a/b") || !ValidName("nats-jetstream_2") {
		t.Error("ValidName")
	}
}
