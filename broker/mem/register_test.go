package mem_test

import (
	"context"
	"errors"
	"testing"

	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/mem"
)

// TestDescriptor: the backend registers as "memory"; Open joins the
// configured Server, else the process's; a Config of another type is an
// invalid configuration; the dev server has no address and empties the
// process's Server when closed.
func TestDescriptor(t *testing.T) {
	d, ok := driver.Lookup(mem.Name)
	if !ok || d.DevServer == nil || d.Router == nil || d.Monitor != nil || d.Topology != nil {
		t.Fatalf("descriptor %+v, want memory with a router and a dev server", d)
	}
	srv, _, _ := newServer(t, mem.ServerConfig{})
	ctx := context.Background()
	b, err := d.Open(ctx, driver.Settings{Instance: "pod-7", Config: mem.Config{Server: srv}})
	if err != nil {
		t.Fatal(err)
	}
	if mb := b.(*mem.Broker); mb.Server() != srv || mb.InstanceID() != "pod-7" {
		t.Errorf("Open joined %p as %q, want %p as pod-7", mb.Server(), mb.InstanceID(), srv)
	}
	def, _ := d.Open(ctx, driver.Settings{})
	if def.(*mem.Broker).Server() != mem.Default() {
		t.Error("Open without a Config did not join Default()")
	}
	if _, err := d.Open(ctx, driver.Settings{Config: 42}); !errors.Is(err, driver.ErrInvalidConfig) {
		t.Errorf("Open(Config 42) = %v, want ErrInvalidConfig", err)
	}
	dev, err := d.DevServer(driver.DevServerConfig{})
	if err != nil || len(dev.Addrs()) != 0 {
		t.Fatalf("DevServer = %v, %v; want one without addresses", dev, err)
	}
	before := mem.Default()
	dev.Close()
	if mem.Default() == before {
		t.Error("closing the dev server kept the process's Server")
	}
	if w := driver.WordsOf(mem.Name); w.Unit != "queue" {
		t.Errorf("words %+v", w)
	}
}
