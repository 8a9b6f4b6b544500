package console

import (
	"net/http"
	"strings"
)

// level is what a route needs.
type level int

const (
	public   level = iota // no session (login, static files)
	viewer                // any logged-in user
	operator              // a user who may change things; POST, CSRF-checked
)

// routes registers the console's pages.
func (c *Console) routes() {
	for _, rt := range []struct {
		pattern string
		need    level
		h       func(*Console, http.ResponseWriter, *http.Request, *session)
	}{
		{"GET /{$}", viewer, (*Console).dlqs},
		{"GET /dlq/{name}", viewer, (*Console).entries},
		{"GET /dlq/{name}/{id}", viewer, (*Console).entry},
		{"GET /dlq/{name}/{id}/payload", viewer, (*Console).payload},
		{"POST /dlq/{name}/{id}/replay", operator, (*Console).replay},
		{"POST /dlq/{name}/{id}/discard", operator, (*Console).discard},
		{"POST /dlq/{name}/replay-all", operator, (*Console).replayAll},
		{"POST /dlq/{name}/discard-all", operator, (*Console).discardAll},
		{"GET /jobs", viewer, (*Console).jobs},
		{"GET /jobs/{id}", viewer, (*Console).job},
		{"POST /jobs/{id}/cancel", operator, (*Console).cancelJob},
		{"GET /workers", viewer, (*Console).workers},
		{"POST /workers/{worker}/pause", operator, (*Console).pauseWorker},
		{"POST /workers/{worker}/resume", operator, (*Console).resumeWorker},
		{"GET /lag", viewer, (*Console).lagPage},
		{"GET /login", public, (*Console).loginPage},
		{"POST /login", public, (*Console).login},
		{"POST /logout", viewer, (*Console).logout},
	} {
		c.mux.Handle(rt.pattern, c.guard(rt.need, rt.h))
	}
	c.mux.Handle("GET /static/", staticHandler())
}

// dispatch serves r through the mux, with the console's own 404 and 405
// pages.
func (c *Console) dispatch(w http.ResponseWriter, r *http.Request) {
	if _, pattern := c.mux.Handler(r); pattern != "" {
		c.mux.ServeHTTP(w, r)
		return
	}
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := c.mux.Handler(probe); m != r.Method && pattern != "" {
			w.Header().Set("Allow", m)
			c.errorPage(w, r, nil, http.StatusMethodNotAllowed, r.Method+" is not allowed here; use "+m)
			return
		}
	}
	c.errorPage(w, r, nil, http.StatusNotFound, "no such page: "+clip(r.URL.Path, 120))
}

// secure sets the headers every response carries: no scripts, no
// framing, no caching, no sniffing.
func (c *Console) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		if !strings.HasPrefix(r.URL.Path, "/static/") {
			h.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r)
	})
}

// recoverPanics turns a handler panic into a logged 500 page.
func (c *Console) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				c.log.Error("console: handler panic", "method", r.Method, "path", r.URL.Path, "panic", v)
				c.errorPage(w, r, nil, http.StatusInternalServerError, "internal error (logged)")
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// clip shortens s to n bytes for display.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
