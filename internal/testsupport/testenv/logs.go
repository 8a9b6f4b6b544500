package testenv

import (
	"context"
	"log/slog"
	"strings"
	"sync"
)

// Logs is a slog.Handler that keeps every record, for tests that assert
// what a component logs (once per outage, at which level).
type Logs struct {
	mu      sync.Mutex
	records []slog.Record
}

// Logger returns a logger writing to l.
func (l *Logs) Logger() *slog.Logger { return slog.New(l) }

// Enabled implements slog.Handler: every level is kept.
func (l *Logs) Enabled(context.Context, slog.Level) bool { return true }

// Handle implements slog.Handler.
func (l *Logs) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, r)
	return nil
}

// WithAttrs implements slog.Handler; the attributes are dropped.
func (l *Logs) WithAttrs([]slog.Attr) slog.Handler { return l }

// WithGroup implements slog.Handler; the group is dropped.
func (l *Logs) WithGroup(string) slog.Handler { return l }

// Count returns how many records of level contain msg in their message.
func (l *Logs) Count(level slog.Level, msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.records {
		if r.Level == level && strings.Contains(r.Message, msg) {
			n++
		}
	}
	return n
}

// CountAbove returns how many records are above level.
func (l *Logs) CountAbove(level slog.Level) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.records {
		if r.Level > level {
			n++
		}
	}
	return n
}

// All returns every record as "LEVEL message", for failure messages.
func (l *Logs) All() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.records))
	for _, r := range l.records {
		out = append(out, r.Level.String()+" "+r.Message)
	}
	return out
}

// Buffer is an io.Writer safe for concurrent writes, for text logs a test
// reads while the component still writes.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write implements io.Writer.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
