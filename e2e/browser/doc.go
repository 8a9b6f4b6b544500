// Package browser drives the dead-letter console (dlq/console) in a real
// headless Chromium with chromedp, over a real in-process stack: a kfake
// Kafka cluster, the Kafka backend, a worker that fails permanently on
// poison messages, the DLQ keeper, heartbeats in Redis, the lag sampler
// and the admin server with the console mounted. It holds tests only.
//
// Chromium is required (Debian's chromium package; .ci/run installs it):
// without it the test fails, unless REDRIVE_BROWSER=skip. With
// REDRIVE_SCREENSHOTS=1 the test saves the console's main pages as PNG
// files under docs/screenshots/ for docs/operations.md.
package browser
