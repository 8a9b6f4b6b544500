package pgstore_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/pgstore"
	"github.com/redrive/redrive/dlq/storetest"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// DefaultURL is the database the tests use unless DATABASE_URL is set.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// newStore opens a store in a schema of its own, dropped when the test
// ends. PostgreSQL is required: unreachable fails the test.
func newStore(t testing.TB) *pgstore.Store {
	t.Helper()
	return open(t, testenv.Schema(t))
}

func open(t testing.TB, schema string) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), testenv.PostgreSQL.URL(), pgstore.Config{
		Schema: schema, MaxConns: 4, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		testenv.PostgreSQL.Fail(t, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) dlq.Store { return newStore(t) })
}

// TestJobStore runs the job store suite on dlq_jobs: two replicas share
// the jobs through the database.
func TestJobStore(t *testing.T) {
	storetest.RunJobs(t, func(t *testing.T) (dlq.Store, dlq.JobStore) {
		s := newStore(t)
		return s, s.Jobs()
	})
}
