package quickstart

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// block is a fenced code block of the README.
type block struct {
	lang, text string
}

// guide is the README's Quick start, as the walk reads it.
type guide struct {
	program string // quickstart/main.go
	// Per broker: the configuration and the shell lines, in order.
	rabbitYAML, kafkaYAML string
	rabbitSh, kafkaDevSh  []string
	// The Kafka section runs the RabbitMQ commands with its own DLQ in
	// place of the RabbitMQ one.
	rabbitDLQ, kafkaDLQ string
}

// repoRoot is the module root, two levels up.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

var (
	fence   = regexp.MustCompile("(?ms)^```([a-z]*)\n(.*?)^```\n")
	heading = regexp.MustCompile(`(?m)^### (.*)$`)
	// "…, `escrow.commands.dlq`, in place of `escrow.commands.payout-executor.dlq`"
	inPlaceOf = regexp.MustCompile("`([^`]+\\.dlq)`,?\\s+in place of\\s+`([^`]+\\.dlq)`")
)

// readGuide reads the Quick start of README.md: the Go program, then under
// "On RabbitMQ" a configuration and shell blocks, under "On Kafka" shell
// blocks, a configuration and the sentence naming its DLQ. It fails the
// test, saying what it missed, when the section no longer has that shape.
func readGuide(t *testing.T) guide {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	start := strings.Index(readme, "\n## Quick start\n")
	if start < 0 {
		t.Fatal("README.md has no \"## Quick start\" section")
	}
	section := readme[start+1:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+4]
	}
	parts := map[string]string{"": section}
	locs := heading.FindAllStringSubmatchIndex(section, -1)
	if len(locs) > 0 {
		parts[""] = section[:locs[0][0]]
	}
	for i, l := range locs {
		end := len(section)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		parts[section[l[2]:l[3]]] = section[l[0]:end]
	}
	var g guide
	for _, bl := range blocks(parts[""]) {
		if bl.lang == "go" {
			g.program = bl.text
		}
	}
	for _, bl := range blocks(parts["On RabbitMQ"]) {
		switch bl.lang {
		case "yaml":
			g.rabbitYAML = bl.text
		case "sh":
			g.rabbitSh = append(g.rabbitSh, lines(bl.text)...)
		}
	}
	for _, bl := range blocks(parts["On Kafka"]) {
		switch bl.lang {
		case "yaml":
			g.kafkaYAML = bl.text
		case "sh":
			g.kafkaDevSh = append(g.kafkaDevSh, lines(bl.text)...)
		}
	}
	if m := inPlaceOf.FindStringSubmatch(parts["On Kafka"]); m != nil {
		g.kafkaDLQ, g.rabbitDLQ = m[1], m[2]
	}
	switch {
	case !strings.HasPrefix(strings.TrimSpace(g.program), "// quickstart/main.go") || !strings.Contains(g.program, "package main"):
		t.Fatal("README Quick start: no ```go block starting with \"// quickstart/main.go\"")
	case g.rabbitYAML == "" || len(g.rabbitSh) == 0:
		t.Fatal("README Quick start: \"### On RabbitMQ\" lacks its ```yaml configuration or its ```sh commands")
	case g.kafkaYAML == "" || len(g.kafkaDevSh) == 0:
		t.Fatal("README Quick start: \"### On Kafka\" lacks its ```yaml configuration or its ```sh command (redrive dev --no-samples)")
	case g.kafkaDLQ == "" || !strings.Contains(strings.Join(g.rabbitSh, "\n"), g.rabbitDLQ):
		t.Fatal("README Quick start: \"### On Kafka\" no longer says which DLQ replaces the RabbitMQ one (\"`X.dlq`, in place of `Y.dlq`\")")
	}
	return g
}

// blocks returns the fenced code blocks of md.
func blocks(md string) []block {
	var out []block
	for _, m := range fence.FindAllStringSubmatch(md, -1) {
		out = append(out, block{lang: m[1], text: m[2]})
	}
	return out
}

// lines returns the commands of a shell block: each non-empty line with
// its trailing comment removed.
func lines(sh string) []string {
	var out []string
	for _, l := range strings.Split(sh, "\n") {
		if l = strings.TrimSpace(stripComment(l)); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// stripComment removes a shell comment: a # at the start or after a blank,
// outside quotes.
func stripComment(l string) string {
	var quote rune
	for i, r := range l {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || l[i-1] == ' ' || l[i-1] == '\t'):
			return l[:i]
		}
	}
	return l
}

func TestStripComment(t *testing.T) {
	for in, want := range map[string]string{
		`redrive serve --config redrive.yaml &   # keeper`: `redrive serve --config redrive.yaml &   `,
		`echo '{"a":"#1"}' | x  # c`:                       `echo '{"a":"#1"}' | x  `,
		`# only a comment`:                                 ``,
		`curl http://h/#frag`:                              `curl http://h/#frag`,
	} {
		if got := stripComment(in); got != want {
			t.Errorf("stripComment(%q) = %q, want %q", in, got, want)
		}
	}
}
