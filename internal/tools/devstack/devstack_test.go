package devstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/assembly/config"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{Token: "t"}, ""},
		{Config{Broker: "rabbitmq", Token: "t"}, ""},
		{Config{Broker: "nats", Token: "t"}, `broker "nats" is not kafka or `},
		{Config{}, "token: required"},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: Validate() = %v, want %q", tt.cfg, err, tt.want)
		}
	}
}

// Start brings up the embedded servers with a configuration that points
// at them and passes validation.
func TestStartKafka(t *testing.T) {
	st, err := Start(Config{Token: "dev-token-1", AdminListen: "127.0.0.1:18081"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := st.Config
	if c.Broker != "kafka" || len(c.Kafka.Brokers) != 3 || c.Redis.Addr != st.RedisAddr() || c.Admin.Listen != "127.0.0.1:18081" {
		t.Fatalf("config = broker %s, kafka %v, redis %s, admin %s", c.Broker, c.Kafka.Brokers, c.Redis.Addr, c.Admin.Listen)
	}
	var names []string
	for _, s := range c.Subscriptions() {
		names = append(names, s.Group)
	}
	if got := strings.Join(names, ","); got != "payout-executor,deal-timeout-worker,reconciliation-worker" {
		t.Errorf("workers = %s", got)
	}
}

// The sample handler does what a message's fate says.
func TestHandlerFates(t *testing.T) {
	tests := []struct {
		fate      Fate
		attempt   int
		wantErr   bool
		permanent bool
		panics    bool
	}{
		{FateOK, 1, false, false, false},
		{FateFlaky, 1, true, false, false},
		{FateFlaky, 2, false, false, false},
		{FateExhaust, 4, true, false, false},
		{FatePermanent, 1, true, true, false},
		{FatePanic, 1, false, false, true},
		{FatePanic, 2, false, false, false},
		{"surprise", 1, true, true, false},
	}
	for _, tt := range tests {
		body, _ := json.Marshal(Sample{N: 1, Kind: "payout", Account: "acct-001", Fate: tt.fate})
		d := &broker.Delivery{Message: broker.Message{Value: body}, Attempt: tt.attempt}
		var err error
		panicked := func() (p bool) {
			defer func() { p = recover() != nil }()
			err = Handler(context.Background(), d)
			return false
		}()
		if panicked != tt.panics || (err != nil) != tt.wantErr || errors.Is(err, broker.ErrPermanent) != tt.permanent {
			t.Errorf("%s attempt %d: err %v (permanent %v), panicked %v", tt.fate, tt.attempt, err, errors.Is(err, broker.ErrPermanent), panicked)
		}
	}
	if err := Handler(context.Background(), &broker.Delivery{Message: broker.Message{Value: []byte("{")}}); !errors.Is(err, broker.ErrPermanent) {
		t.Errorf("a payload that is not JSON: %v, want a permanent error", err)
	}
}

// On RabbitMQ every topic (hence group queue and DLQ) and the rabbitmq
// prefix start with the stack's prefix; on Kafka the topics are the
// sample names.
func TestNamesArePrefixed(t *testing.T) {
	st, err := Start(Config{Broker: "rabbitmq", Prefix: "p-1", Token: "dev-token-1"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.Config.RabbitMQ.Prefix != "p-1" {
		t.Errorf("rabbitmq.prefix = %q", st.Config.RabbitMQ.Prefix)
	}
	for _, w := range st.Config.Workers {
		if !strings.HasPrefix(w.Topic, "p-1.") {
			t.Errorf("worker %s reads %s, not under p-1.", w.Name, w.Topic)
		}
	}
	for topic := range st.Config.Lag.Thresholds {
		if !strings.HasPrefix(topic, "p-1.") {
			t.Errorf("lag threshold of %s, not under p-1.", topic)
		}
	}
	if err := (Config{Prefix: "a.b", Token: "t"}).Validate(); err == nil {
		t.Error("prefix a.b accepted")
	}
}

// The configuration printed for the user's program loads, points at the
// stack and has one worker to rename.
func TestProgramYAML(t *testing.T) {
	for _, b := range []string{"kafka", "rabbitmq"} {
		st, err := Start(Config{Broker: string(b), Token: "dev-token-1"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		t.Setenv("REDRIVE_ADMIN_TOKEN", "program-token")
		c, err := config.Parse(st.ProgramYAML())
		if err != nil {
			t.Fatalf("%s: %v\n%s", b, err, st.ProgramYAML())
		}
		if string(c.Broker) != b || c.Redis.Addr != st.RedisAddr() || c.Admin.Token != "program-token" || len(c.Workers) != 1 {
			t.Errorf("%s: %+v", b, c)
		}
		// The program beats because the section is there (worker.Load),
		// and the hint names what exists (issue 41: it named a
		// worker.WithHeartbeat that never existed).
		if y := string(st.ProgramYAML()); !c.Redis.Configured() || !strings.Contains(y, "worker.Load beats here") || strings.Contains(y, "WithHeartbeat") {
			t.Errorf("%s: the redis: line does not say worker.Load beats there:\n%s", b, y)
		}
		if b == "kafka" && strings.Join(c.Kafka.Brokers, ",") != strings.Join(st.KafkaBrokers(), ",") {
			t.Errorf("kafka.brokers %v, want %v", c.Kafka.Brokers, st.KafkaBrokers())
		}
	}
}

// The sample producer's dead letters fall into distinct failure groups:
// the payouts' DLQ gets three (exhausted retries, closed accounts,
// over-limit amounts), whatever the numbers and accounts of the messages.
func TestSampleFailureGroups(t *testing.T) {
	groups := map[string]bool{}
	for n := int64(1); n <= 8; n++ {
		for _, fate := range []Fate{FateExhaust, FatePermanent} {
			body, _ := json.Marshal(Sample{N: n, Kind: "payout", Account: fmt.Sprintf("acct-%03d", n*7), Amount: int(n * 12345), Fate: fate})
			err := Handler(context.Background(), &broker.Delivery{Message: broker.Message{Value: body}, Attempt: 5})
			if err == nil {
				t.Fatalf("%s %d: no error", fate, n)
			}
			groups[dlq.NormalizeMessage(err.Error())] = true
		}
	}
	if len(groups) != 3 {
		t.Errorf("%d failure groups, want 3: %v", len(groups), groups)
	}
}
