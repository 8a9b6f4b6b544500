package pgstore_test

import (
	"context"
	"log/slog"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/pgstore"
	"github.com/redrive/redrive/dlq/storetest"
)

// DefaultURL is the database the tests use unless DATABASE_URL is set.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

func databaseURL() string {
	if u := os.Getenv("DATABASE_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// newStore opens a store in a schema of its own, dropped when the test
// ends. PostgreSQL is required: unreachable fails the test.
func newStore(t *testing.T) *pgstore.Store {
	t.Helper()
	schema := "redrive_test_" + broker.NewMessageID()[:12]
	s := open(t, schema)
	t.Cleanup(func() { dropSchema(t, schema) })
	return s
}

func open(t *testing.T, schema string) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), databaseURL(), pgstore.Options{
		Schema: schema, MaxConns: 4, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatalf("PostgreSQL is required (DATABASE_URL, default %s): %v", DefaultURL, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func dropSchema(t *testing.T, schema string) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, databaseURL())
	if err != nil {
		t.Errorf("drop schema %s: %v", schema, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
		t.Errorf("drop schema %s: %v", schema, err)
	}
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) dlq.Store { return newStore(t) })
}
