package admin

import (
	"net/http"
	"path"
	"strings"
)

// routes are the API's routes (Go 1.22 ServeMux patterns). configs/openapi.yaml
// documents exactly these, with every status each answers; tests check both
// ways (openapi_test.go).
var routes = []struct {
	pattern string
	handler func(s *Server, w http.ResponseWriter, r *http.Request)
}{
	{"GET /internal/v1/dlq", (*Server).listDLQs},
	{"GET /internal/v1/dlq/{topic}", (*Server).listEntries},
	{"GET /internal/v1/dlq/{topic}/{id}", (*Server).showEntryOrGroups},
	{"GET /internal/v1/dlq/{topic}/{id}/payload", (*Server).payload},
	{"DELETE /internal/v1/dlq/{topic}/{id}", (*Server).discard},
	{"POST /internal/v1/dlq/replay", (*Server).replay},
	{"POST /internal/v1/dlq/replay-all", (*Server).replayAll},
	{"POST /internal/v1/dlq/discard-all", (*Server).discardAll},
	{"GET /internal/v1/dlq/jobs", (*Server).listJobs},
	{"GET /internal/v1/dlq/jobs/{id}", (*Server).job},
	{"POST /internal/v1/dlq/jobs/{id}/cancel", (*Server).cancelJob},
	{"POST /internal/v1/workers/{worker}/pause", (*Server).pauseWorker},
	{"POST /internal/v1/workers/{worker}/resume", (*Server).resumeWorker},
	{"GET /internal/v1/whoami", (*Server).whoami},
	{"GET /internal/v1/openapi.json", (*Server).openAPI},
}

// groupsRoute is the operation of Server.groups, served through the
// pattern of showEntry: as ServeMux patterns, GET …/dlq/{topic}/groups and
// GET …/dlq/jobs/{id} would conflict (neither is more specific), so
// showEntryOrGroups hands an {id} of "groups" to groups. No entry has that
// id: ids are generated (dlq.NewID) or the backend's (Kafka coordinates, kafka.RecordID).
const groupsRoute = "GET /internal/v1/dlq/{topic}/groups"

// showEntryOrGroups serves GET /internal/v1/dlq/{topic}/{id}: the entry,
// or the DLQ's groups for the id "groups" (groupsRoute).
func (s *Server) showEntryOrGroups(w http.ResponseWriter, r *http.Request) {
	if r.PathValue("id") == "groups" {
		s.groups(w, r)
		return
	}
	s.showEntry(w, r)
}

// methods are those the API answers to; the others are 405 where a path
// exists.
var methods = []string{http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodPut, http.MethodPatch}

// route dispatches through the mux, answering in JSON where the mux would
// answer in text: 404 for unknown paths (and for paths that are not
// canonical, such as ones with "..", instead of redirecting), 405 with an
// Allow header for a known path with the wrong method.
func (s *Server) route() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.EscapedPath() // as the mux matches: %2F stays inside a segment
		if p == "" || path.Clean(p) != p {
			writeError(w, http.StatusNotFound, CodeNotFound, "", "no such route")
			return
		}
		if _, pattern := s.mux.Handler(r); pattern != "" {
			s.mux.ServeHTTP(w, r)
			return
		}
		var allow []string
		for _, m := range methods {
			if m == r.Method {
				continue
			}
			probe := r.Clone(r.Context())
			probe.Method = m
			if _, pattern := s.mux.Handler(probe); pattern != "" {
				allow = append(allow, m)
			}
		}
		if len(allow) == 0 {
			writeError(w, http.StatusNotFound, CodeNotFound, "", "no such route")
			return
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed, "", r.Method+" is not allowed here; use "+strings.Join(allow, " or "))
	})
}
