package pgmigrate_test

import (
	"context"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/internal/pgmigrate"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

func TestLoad(t *testing.T) {
	for _, c := range []struct {
		name  string
		files fstest.MapFS
		want  []int // versions; nil with wantErr
		err   bool
	}{
		{"sorted", fstest.MapFS{"m/0002_b.sql": {Data: []byte("B")}, "m/0001_a.sql": {Data: []byte("A")}, "m/0010_c.sql": {}}, []int{1, 2, 10}, false},
		{"none", fstest.MapFS{}, nil, false},
		{"badly named", fstest.MapFS{"m/init.sql": {}}, nil, true},
		{"version 0", fstest.MapFS{"m/0000_zero.sql": {}}, nil, true},
		{"two of one version", fstest.MapFS{"m/0001_a.sql": {}, "m/01_b.sql": {}}, nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ms, err := pgmigrate.Load(c.files, "m/*.sql")
			if c.err {
				if err == nil {
					t.Fatalf("Load = %v, want an error", ms)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, m := range ms {
				got = append(got, m.Version)
			}
			latest := 0
			if len(c.want) > 0 {
				latest = c.want[len(c.want)-1]
			}
			if len(got) != len(c.want) || pgmigrate.Latest(ms) != latest {
				t.Fatalf("versions %v (latest %d), want %v", got, pgmigrate.Latest(ms), c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("versions %v, want %v", got, c.want)
				}
			}
			if len(ms) > 0 && ms[0].Name != "a" {
				t.Errorf("first migration named %q, want a", ms[0].Name)
			}
		})
	}
}

// TestLock: another session gives up on the lock when its context ends,
// and gets it once the first unlocks.
func TestLock(t *testing.T) {
	ctx := t.Context()
	connect := func() *pgx.Conn {
		c, err := pgx.Connect(ctx, testenv.PostgreSQL.URL())
		if err != nil {
			testenv.PostgreSQL.Fail(t, err)
		}
		t.Cleanup(func() { _ = c.Close(context.Background()) })
		return c
	}
	a, b, c := connect(), connect(), connect()
	key := "redrive/pgmigrate/test/" + testenv.Name(t)
	if err := pgmigrate.Lock(ctx, a, key); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 3*pgmigrate.LockPoll)
	defer cancel()
	if err := pgmigrate.Lock(short, b, key); err == nil { // (pgx may close b: a query cut by its context)
		t.Fatal("a second session took a lock the first holds")
	}
	got := make(chan error, 1)
	go func() { got <- pgmigrate.Lock(ctx, c, key) }()
	pgmigrate.Unlock(ctx, a, key)
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the second session did not get the lock after the first released it")
	}
	pgmigrate.Unlock(ctx, c, key)
}
