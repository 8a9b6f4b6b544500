package pgstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq/pgstore"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  pgstore.Config
		want string // "" = valid, else the field the error must name
	}{
		{"zero is the default", pgstore.Config{}, ""},
		{"set", pgstore.Config{Schema: "dlq_1", MaxConns: 4, ConnectTimeout: time.Second, BackfillBatch: 10, BackfillManual: true}, ""},
		{"bad schema", pgstore.Config{Schema: "Robert'); DROP TABLE x;--"}, "Config.Schema"},
		{"schema too long", pgstore.Config{Schema: strings.Repeat("a", 64)}, "Config.Schema"},
		{"negative MaxConns", pgstore.Config{MaxConns: -1}, "Config.MaxConns"},
		{"negative ConnectTimeout", pgstore.Config{ConnectTimeout: -time.Second}, "Config.ConnectTimeout"},
		{"negative BackfillBatch", pgstore.Config{BackfillBatch: -1}, "Config.BackfillBatch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Validate = %v, want one line naming %s", err, tt.want)
			}
			// Open refuses before it dials: the URL does not matter.
			if _, err := pgstore.Open(context.Background(), "postgres://127.0.0.1:1/none", tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Open = %v, want the Validate error", err)
			}
		})
	}
}
