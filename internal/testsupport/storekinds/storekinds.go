// Package storekinds opens the dead-letter stores the tests of the
// stores' users (the admin API, the console) run on: the embedded store
// and PostgreSQL in a throwaway schema. It is test support, internal so
// that the public conformance suite dlq/storetest does not import pgx or
// either store.
package storekinds

import (
	"context"
	"log/slog"
	"testing"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/memstore"
	"github.com/redrive/redrive/dlq/pgstore"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// Kind is a store the tests of the store's users (the admin API, the
// console) run on.
type Kind struct {
	// Name is the store's package, "memstore" or "pgstore".
	Name string
	// Open returns an empty store, closed (and dropped) when t ends.
	Open func(t *testing.T) dlq.Store
}

// Kinds returns the embedded store and PostgreSQL (testenv.PostgreSQL) in
// a throwaway schema. An unreachable PostgreSQL fails the test: it is a
// required service, never skipped.
func Kinds() []Kind {
	quiet := slog.New(slog.DiscardHandler)
	return []Kind{
		{"memstore", func(t *testing.T) dlq.Store {
			s := memstore.New(memstore.Config{Logger: quiet})
			t.Cleanup(func() { _ = s.Close() })
			return s
		}},
		{"pgstore", func(t *testing.T) dlq.Store {
			t.Helper()
			s, err := pgstore.Open(context.Background(), testenv.PostgreSQL.URL(), pgstore.Config{Schema: testenv.Schema(t), MaxConns: 4, Logger: quiet})
			if err != nil {
				testenv.PostgreSQL.Fail(t, err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		}},
	}
}
