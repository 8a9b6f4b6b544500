package config

import (
	"strings"
	"testing"
)

// env returns a lookupFunc over a fixed environment.
func env(vars map[string]string) lookupFunc {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// noEnv is an empty environment.
var noEnv = env(nil)

// lines returns the one-line messages of the problems in err.
func lines(err error) []string {
	var out []string
	for _, fe := range FieldErrors(err) {
		out = append(out, fe.Error())
	}
	return out
}

// mustParse parses doc with the environment vars or fails the test.
func mustParse(t *testing.T, doc string, vars map[string]string) *Config {
	t.Helper()
	c, err := parse([]byte(doc), env(vars))
	if err != nil {
		t.Fatalf("parse:\n%s\nerror:\n%v", doc, err)
	}
	return c
}

// assertLines checks that err holds exactly the want problems, in order.
func assertLines(t *testing.T, err error, want ...string) {
	t.Helper()
	got := lines(err)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n got: %q\nwant: %q\n(error: %v)", got, want, err)
	}
	for _, l := range got {
		if strings.Contains(l, "\n") {
			t.Errorf("problem %q spans several lines", l)
		}
	}
}

// minimal is the smallest valid configuration.
const minimal = `
broker: rabbitmq
workers:
  - {name: w, topic: t}
`
