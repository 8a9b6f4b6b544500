package pgstore

// SetConcurrentlyAbove sets the partition size above which migration 8
// builds its index CONCURRENTLY, until the returned func restores it. Not
// for parallel tests.
func SetConcurrentlyAbove(n int64) (restore func()) {
	old := concurrentlyAbove
	concurrentlyAbove = n
	return func() { concurrentlyAbove = old }
}
