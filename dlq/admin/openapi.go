package admin

import (
	_ "embed" // the OpenAPI document
	"net/http"
)

//go:generate go run ../../internal/tools/openapi/gen -root ../.. -out openapi.json

// openAPIJSON is configs/openapi.yaml as JSON, generated (go generate
// ./dlq/admin); a test fails when it is stale.
//
//go:embed openapi.json
var openAPIJSON []byte

// openAPI serves the API's OpenAPI 3.1 document.
func (s *Server) openAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(openAPIJSON)
}

// observeStatus, when set (by the package's tests only, before any New),
// is told the status of every response: the test checks each against the
// operation's responses in the OpenAPI document.
var observeStatus func(r *http.Request, status int)

// statusRecorder passes a response through and notes its status.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// observed wraps next so that observeStatus sees every status.
func observed(next http.Handler) http.Handler {
	if observeStatus == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		observeStatus(r, rec.status)
	})
}
