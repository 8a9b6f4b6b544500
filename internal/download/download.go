// Package download serves a dead letter's payload as an HTTP download:
// the one way the admin API and the console both send it.
package download

import (
	"context"
	"net/http"
	"strconv"

	"github.com/redrive/redrive/dlq/operate"
)

// Payload writes the whole payload of entry id of dlqName to w as a
// download, streamed from the store a chunk at a time: 200 with
// application/octet-stream, Content-Disposition: attachment and
// Content-Length, or 204 for a message without payload. started reports
// whether the response was begun; when it was not, the error (e.g.
// dlq.ErrNotFound) is the caller's to answer.
func Payload(ctx context.Context, w http.ResponseWriter, ops *operate.Ops, dlqName, id string) (started bool, err error) {
	err = ops.Payload(ctx, dlqName, id, func(size int64, isNil bool) {
		started = true
		h := w.Header()
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		if isNil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Content-Disposition", `attachment; filename="`+id+`.payload"`) // ids are [A-Za-z0-9._-]
		h.Set("Content-Length", strconv.FormatInt(size, 10))
		w.WriteHeader(http.StatusOK)
	}, w)
	return started, err
}
