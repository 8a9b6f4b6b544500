package memstore_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/memstore"
	"github.com/redrive/redrive/dlq/storetest"
)

func quiet() memstore.Config { return memstore.Config{Logger: slog.New(slog.DiscardHandler)} }

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) dlq.Store {
		s := memstore.New(quiet())
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

// The suite again with a journal: every change also goes to the file.
func TestConformanceJournaled(t *testing.T) {
	storetest.Run(t, func(t *testing.T) dlq.Store {
		s, err := memstore.Open(filepath.Join(t.TempDir(), "dlq.jsonl"), quiet())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

func TestClosed(t *testing.T) {
	s := memstore.New(quiet())
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Insert(context.Background(), dlq.Record{Broker: "kafka", DLQ: "a.dlq", ID: "0-1"}); err == nil {
		t.Error("Insert after Close succeeded")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

// TestConfigValidate: every memstore Config is valid, the zero one first.
func TestConfigValidate(t *testing.T) {
	for _, cfg := range []memstore.Config{{}, {Sync: true, Logger: slog.New(slog.DiscardHandler), Now: time.Now}} {
		if err := cfg.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v, want nil", cfg, err)
		}
	}
}

// The job store conformance suite on the in-memory job store, shared by
// two Jobs of one process.
func TestJobStore(t *testing.T) {
	storetest.RunJobs(t, func(t *testing.T) (dlq.Store, dlq.JobStore) {
		s := memstore.New(quiet())
		t.Cleanup(func() { _ = s.Close() })
		return s, dlq.NewMemJobStore()
	})
}
