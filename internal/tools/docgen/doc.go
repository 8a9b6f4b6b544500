// Package docgen generates the reference parts of the documentation from
// the code, so that they cannot drift: docs/configuration.md from the
// configuration's Go types and their doc comments (internal/assembly/config), and
// the metrics list of docs/monitoring.md from the registered Prometheus
// collectors. Its tests fail when a generated file is stale, when a
// configuration key has no doc comment, when a relative link or anchor in
// README.md or docs/ does not resolve, when docs/architecture.md names
// a function that does not exist, when an exported name has no doc
// comment, or when a Go file over 450 lines does not say why it stays one
// file.
//
// Regenerate from the repository root with
//
//	go generate ./internal/tools/docgen
package docgen

//go:generate go run ./gen -root ../../..
