package driver

import (
	"os"
	"strconv"
)

// DefaultInstance returns "hostname-pid" ("unknown-pid" without a host
// name): the identity of a worker process when the configuration gives
// none (heartbeat.instance). It changes on every restart; a platform that
// names its processes stably (a Kubernetes pod name) should be preferred.
func DefaultInstance() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "unknown"
	}
	return h + "-" + strconv.Itoa(os.Getpid())
}
