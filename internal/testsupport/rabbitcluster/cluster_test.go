package rabbitcluster

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	for _, tt := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(*Config) {}, ""},
		{func(c *Config) { c.Dir = "relative" }, "dir"},
		{func(c *Config) { c.Dir = "/" }, "dir"},
		{func(c *Config) { c.Nodes = 10 }, "nodes"},
		{func(c *Config) { c.BasePort = 50000 }, "base port"},
		{func(c *Config) { c.Prefix = "a@b" }, "prefix"},
	} {
		c := Config{}.WithDefaults()
		tt.mod(&c)
		err := c.Validate()
		if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("Validate(%+v) = %v, want an error naming %q", c, err, tt.want)
		}
	}
}

func TestNodes(t *testing.T) {
	ns := nodes(Config{}.WithDefaults())
	if len(ns) != 3 || ns[0].Name != "rrc1@localhost" || ns[2].Port != 5683 || ns[2].DistPort != 25683 {
		t.Fatalf("nodes = %+v", ns)
	}
	if got := ns[1].URL(); got != "amqp://guest:guest@127.0.0.1:5682/" {
		t.Errorf("URL = %q", got)
	}
}

func TestLastJSON(t *testing.T) {
	out := "Warning: something\n[\n{\"name\":\"q\",\"leader\":\"rrc2@localhost\"}\n,{\"name\":\"r\",\"leader\":\"rrc1@localhost\"}\n]\n"
	var qs []struct{ Name, Leader string }
	if err := json.Unmarshal(firstJSON(out), &qs); err != nil || len(qs) != 2 || qs[1].Leader != "rrc1@localhost" {
		t.Errorf("firstJSON = %q: %v %v", firstJSON(out), qs, err)
	}
}

// The shared node and this process are never taken for a cluster process.
func TestOursOnlyMatchesTheClusterHome(t *testing.T) {
	if ours(os.Getpid(), "/tmp/redrive-rabbitcluster/home") {
		t.Error("this process was taken for a node")
	}
	if ours(1, "/tmp/redrive-rabbitcluster/home") {
		t.Error("pid 1 was taken for a node")
	}
}

func TestLockIsExclusive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	f, err := acquire(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := acquire(path); !errors.Is(err, ErrBusy) {
		t.Fatalf("second acquire = %v, want ErrBusy", err)
	}
	f.Close()
	g, err := acquire(path)
	if err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
	g.Close()
}
