//go:build !unix

package heartbeat

// processAlive cannot tell here: every process counts as alive, so no
// predecessor is retired by its successor.
func processAlive(int) bool { return true }
