package relay_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/relay"
	"github.com/redrive/redrive/worker"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	testenv.RunValidate(t, []testenv.ValidateCase[relay.Config]{
		{Name: "zero is the default", Config: relay.Config{}},
		{Name: "Workers are the relay's", Config: relay.Config{Runtime: worker.Config{Workers: []string{"w"}}}, Want: "Config.Runtime.Workers"},
		{Name: "EndpointStats are the relay's", Config: relay.Config{Runtime: worker.Config{EndpointStats: map[string]func() *heartbeat.Endpoint{}}},
			Want: "Config.Runtime.EndpointStats"},
		{Name: "runtime", Config: relay.Config{Runtime: worker.Config{PausePoll: -1}}, Want: "Config.Runtime"},
	}, relay.Config.Validate, func(c relay.Config) error {
		_, err := relay.Parse(t.Context(), []byte("broker: rabbitmq\n"), c)
		if errors.Is(err, relay.ErrNoEndpoint) {
			return nil
		}
		return err
	})
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, yaml, want string }{
		{"no endpoint", "broker: rabbitmq\nworkers: [{name: w, topic: t}]\n", relay.ErrNoEndpoint.Error()},
		{"bad endpoint", "broker: rabbitmq\nworkers: [{name: w, topic: t, endpoint: {url: \"ftp://h/\"}}]\n", "workers[0].endpoint.url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := relay.Parse(t.Context(), []byte(tc.yaml), relay.Config{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}
