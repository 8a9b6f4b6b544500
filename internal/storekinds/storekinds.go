// Package storekinds opens the dead-letter stores the tests of the
// stores' users (the admin API, the console) run on: the embedded store
// and PostgreSQL in a throwaway schema. It is test support, internal so
// that the public conformance suite dlq/storetest does not import pgx or
// either store.
package storekinds

import (
	"context"
	"log/slog"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/memstore"
	"github.com/redrive/redrive/dlq/pgstore"
)

// DefaultDatabaseURL is the PostgreSQL of the tests when DATABASE_URL is
// not set.
const DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// Kind is a store the tests of the store's users (the admin API, the
// console) run on.
type Kind struct {
	// Name is the store's package, "memstore" or "pgstore".
	Name string
	// Open returns an empty store, closed (and dropped) when t ends.
	Open func(t *testing.T) dlq.Store
}

// Kinds returns the embedded store and PostgreSQL (DATABASE_URL, default
// DefaultDatabaseURL) in a throwaway schema. An unreachable PostgreSQL
// fails the test: it is a required service, never skipped.
func Kinds() []Kind {
	quiet := slog.New(slog.DiscardHandler)
	return []Kind{
		{"memstore", func(t *testing.T) dlq.Store {
			s := memstore.New(memstore.Options{Logger: quiet})
			t.Cleanup(func() { _ = s.Close() })
			return s
		}},
		{"pgstore", func(t *testing.T) dlq.Store {
			t.Helper()
			ctx := context.Background()
			url := os.Getenv("DATABASE_URL")
			if url == "" {
				url = DefaultDatabaseURL
			}
			schema := "redrive_test_" + broker.NewMessageID()[:12]
			s, err := pgstore.Open(ctx, url, pgstore.Options{Schema: schema, MaxConns: 4, Logger: quiet})
			if err != nil {
				t.Fatalf("PostgreSQL is required (DATABASE_URL): %v", err)
			}
			t.Cleanup(func() {
				_ = s.Close()
				conn, err := pgx.Connect(ctx, url)
				if err != nil {
					t.Errorf("drop schema %s: %v", schema, err)
					return
				}
				defer conn.Close(ctx)
				if _, err := conn.Exec(ctx, `DROP SCHEMA `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
					t.Errorf("drop schema %s: %v", schema, err)
				}
			})
			return s
		}},
	}
}
