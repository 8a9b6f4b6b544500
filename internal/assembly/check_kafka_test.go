package assembly_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/internal/assembly"
	"github.com/redrive/redrive/internal/assembly/config"
)

func TestKafkaCheckNames(t *testing.T) {
	n := func(k int) string { return strings.Repeat("n", k) }
	for _, tc := range []struct {
		name string
		doc  string
		want []string
	}{
		{"fine: workers of one topic share its DLQ", "workers: [{name: b, topic: a}, {name: c, topic: a}, {name: d, topic: x}]", nil},
		{"two workers, one retry topic", "workers: [{name: retry.c, topic: a}, {name: c, topic: a.retry.retry}]", nil},
		{"two workers, one retry topic, really", "workers: [{name: b.retry.c, topic: a}, {name: c, topic: a.retry.b}]",
			[]string{`workers[1].name: its retry topic "a.retry.b.retry.c" is also the retry topic of workers[0] (topic "a", name "b.retry.c"): rename one of the workers`}},
		{"a DLQ that is a worker's topic", "workers: [{name: b, topic: a}, {name: c, topic: a.dlq}]",
			[]string{`workers[1].topic: its topic "a.dlq" is also the dead-letter topic of workers[0] (topic "a", name "b"): rename one of the workers`}},
		{"dead-letter topic too long", "workers: [{name: w, topic: " + n(246) + "}]",
			[]string{`workers[0].topic: its dead-letter topic "` + driver.ClipName(n(246)+".dlq") + `" is 250 characters, over Kafka's 249`,
				`workers[0].name: its retry topic "` + driver.ClipName(n(246)+".retry.w") + `" is 254 characters, over Kafka's 249`}},
		{"retry topic too long, blocking mode too (replays use it)", "workers: [{name: " + n(200) + ", topic: " + n(43) + "}]",
			[]string{`workers[0].name: its retry topic "` + driver.ClipName(n(43)+".retry."+n(200)) + `" is 250 characters, over Kafka's 249`}},
		{"foreign DLQs", "workers: [{name: b, topic: a}]\nkafka: {brokers: [k:9092], foreign_dlqs: [{topic: a.DLT, replay_to: a}, {topic: x-dlq, replay_to: other}]}", nil},
		{"a foreign DLQ that is redrive's", "workers: [{name: b, topic: a}]\nkafka: {brokers: [k:9092], foreign_dlqs: [{topic: a.dlq, replay_to: c}, {topic: a, replay_to: c}, {topic: a.retry.b, replay_to: c}]}",
			[]string{`kafka.foreign_dlqs[0].topic: "a.dlq" is also the dead-letter topic of workers[0] (topic "a", name "b"): a foreign dead-letter topic is another application's, not redrive's`,
				`kafka.foreign_dlqs[1].topic: "a" is also the topic of workers[0] (topic "a", name "b"): a foreign dead-letter topic is another application's, not redrive's`,
				`kafka.foreign_dlqs[2].topic: "a.retry.b" is also the retry topic of workers[0] (topic "a", name "b"): a foreign dead-letter topic is another application's, not redrive's`}},
		{"a foreign DLQ replaying to a redrive DLQ", "workers: [{name: b, topic: a}]\nkafka: {brokers: [k:9092], foreign_dlqs: [{topic: a.DLT, replay_to: a.dlq}]}",
			[]string{`kafka.foreign_dlqs[0].replay_to: "a.dlq" is the dead-letter topic of workers[0] (topic "a", name "b"): replays must go to a topic consumers read`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			head := "broker: kafka\nkafka: {brokers: [k:9092]}\n"
			if strings.Contains(tc.doc, "kafka:") {
				head = "broker: kafka\n"
			}
			c, err := config.Parse([]byte(head + tc.doc))
			if err != nil {
				t.Fatalf("the configuration itself is invalid: %v", err)
			}
			var got []string
			if err := assembly.Check(c); err != nil {
				got = strings.Split(err.Error(), "\n")
				if !errors.Is(err, config.ErrInvalid) {
					t.Errorf("assembly.Check = %v, not a config.ErrInvalid", err)
				}
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("problems:\n got: %q\nwant: %q", got, tc.want)
			}
		})
	}
}
