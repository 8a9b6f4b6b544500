package heartbeat

import (
	"context"
	"fmt"
	"log/slog"
)

// RedisLogger adapts l to go-redis's logger at debug level. go-redis logs
// every failed dial through its own global logger (to stderr by default),
// which would defeat the publisher's once-per-outage logging; a program
// quiets it once at start-up:
//
//	redis.SetLogger(heartbeat.RedisLogger(logger))
func RedisLogger(l *slog.Logger) interface {
	Printf(ctx context.Context, format string, v ...any)
} {
	return redisLogger{l}
}

type redisLogger struct{ l *slog.Logger }

func (r redisLogger) Printf(ctx context.Context, format string, v ...any) {
	r.l.DebugContext(ctx, fmt.Sprintf(format, v...), "component", "go-redis")
}
