package console_test

import (
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/redrive/redrive/dlq/admin"
	"github.com/redrive/redrive/dlq/console"
	"github.com/redrive/redrive/dlq/jobs"
	"github.com/redrive/redrive/dlq/memstore"
	"github.com/redrive/redrive/dlq/operate"
)

// Example mounts the console next to the admin API, as redrive serve
// does: both share one jobs.Jobs (the replay-all jobs); the admin server
// serves /internal/ and the console the rest, with its own login.
func Example() {
	store := memstore.New(memstore.Config{})
	defer store.Close()
	quiet := slog.New(slog.DiscardHandler)
	ops, err := operate.New(operate.Config{Store: store, Logger: quiet}) // add a Republisher (the broker) to replay
	if err != nil {
		log.Fatal(err)
	}

	jobs, err := jobs.New(jobs.Config{Ops: ops, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	c, err := console.New(console.Config{
		Ops: ops, Jobs: jobs, Broker: "kafka", Logger: quiet,
		Users: []console.User{
			{Name: "alice", Token: "operator-secret-token"},
			{Name: "victor", Token: "viewer-secret-token", ReadOnly: true},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	srv, err := admin.New(admin.Config{
		Ops: ops, Jobs: jobs, Listen: "127.0.0.1:8080", Logger: quiet, Tokens: []admin.Token{{Name: "ci", Secret: "api-secret-token"}},
		UI: c.Handler(),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close() // closes the jobs too

	// Without a session, pages send the browser to the login form.
	w := httptest.NewRecorder()
	srv.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8080/", nil))
	fmt.Println(w.Code, w.Header().Get("Location"))

	// Logging in sets the session cookie.
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8080/login", strings.NewReader("token=operator-secret-token"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w = httptest.NewRecorder()
	srv.Handler().ServeHTTP(w, req)
	ck := w.Result().Cookies()[0]
	fmt.Println(w.Code, w.Header().Get("Location"), ck.Name, ck.HttpOnly, ck.SameSite == http.SameSiteStrictMode)
	// Output:
	// 303 /login?next=%2F
	// 303 / redrive_session true true
}
