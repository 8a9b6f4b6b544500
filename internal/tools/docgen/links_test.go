package docgen

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// root is the repository root, from this package's directory.
const root = "../../.."

// docFiles are the Markdown files whose links are checked: README.md and
// docs/*.md.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	if len(files) < 2 {
		t.Fatalf("no docs found under %s/docs", root)
	}
	return files
}

var (
	fence      = regexp.MustCompile("^\\s*(```|~~~)")
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	inlineLink = regexp.MustCompile(`!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^()\s]*(?:\([^()]*\))?[^()\s]*)(?:\s+"[^"]*")?\)`)
	heading    = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	htmlAnchor = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
)

// link is a relative link found in a Markdown file.
type link struct {
	file   string // the file it is in
	line   int
	target string // as written
}

// markdown is a Markdown file split into what links and anchors need.
type markdown struct {
	links   []link
	anchors map[string]bool
}

// parseMarkdown reads the links (outside code) and the anchors of a file,
// anchors as GitHub makes them.
func parseMarkdown(path string) (markdown, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return markdown{}, err
	}
	md := markdown{anchors: map[string]bool{}}
	seen := map[string]int{}
	inFence := false
	for i, line := range strings.Split(string(data), "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			slug := slugify(m[2])
			if n := seen[slug]; n > 0 {
				md.anchors[fmt.Sprintf("%s-%d", slug, n)] = true
			} else {
				md.anchors[slug] = true
			}
			seen[slug]++
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			md.anchors[m[1]] = true
		}
		text := codeSpan.ReplaceAllString(line, "")
		for _, m := range inlineLink.FindAllStringSubmatch(text, -1) {
			md.links = append(md.links, link{file: path, line: i + 1, target: m[2]})
		}
	}
	return md, nil
}

// slugify turns a heading into its anchor the way GitHub does: the
// rendered text (markup and link targets removed), lower case, every
// character that is not a letter, a digit, a space, a hyphen or an
// underscore removed, spaces turned into hyphens.
func slugify(h string) string {
	h = inlineLink.ReplaceAllString(h, "$1")
	h = strings.NewReplacer("`", "", "*", "").Replace(h)
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestSlugify(t *testing.T) {
	for in, want := range map[string]string{
		"Delay modes: `route` (default) and `hops`": "delay-modes-route-default-and-hops",
		"`/healthz` and `/readyz`":                  "healthz-and-readyz",
		"Poison pills (`workers[].max_claims`)":     "poison-pills-workersmax_claims",
		"Encodings, and why replay is byte-exact":   "encodings-and-why-replay-is-byte-exact",
		"Benchmarks: `redrive bench`":               "benchmarks-redrive-bench",
		"See [the guide](guide.md) now":             "see-the-guide-now",
		"worker-heartbeat-missing":                  "worker-heartbeat-missing",
		"Heartbeat keys (Redis)":                    "heartbeat-keys-redis",
		"What the RabbitMQ backend guarantees":      "what-the-rabbitmq-backend-guarantees",
		"Worker states (`redrive workers`)":         "worker-states-redrive-workers",
		"Messages that do not reach the DLQ":        "messages-that-do-not-reach-the-dlq",
		"Fault injection (`make faults`)":           "fault-injection-make-faults",
		"A first look: `redrive dev`":               "a-first-look-redrive-dev",
		"Group queue or topic → handler":            "group-queue-or-topic--handler",
		"Dead letters: the envelope":                "dead-letters-the-envelope",
		"Retry modes and ordering":                  "retry-modes-and-ordering",
		"Package map":                               "package-map",
	} {
		if got := slugify(in); got != want {
			t.Errorf("slugify(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestLinks checks that every relative link and every #anchor in
// README.md and docs/*.md resolves: the file exists, and the anchor is a
// heading (or an <a name>) of the file it points into.
func TestLinks(t *testing.T) {
	pages := map[string]markdown{}
	page := func(path string) (markdown, error) {
		path = filepath.Clean(path)
		if md, ok := pages[path]; ok {
			return md, nil
		}
		md, err := parseMarkdown(path)
		if err == nil {
			pages[path] = md
		}
		return md, err
	}
	checked := 0
	for _, f := range docFiles(t) {
		md, err := page(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range md.links {
			if msg := checkLink(l.file, l.target, page); msg != "" {
				t.Errorf("%s:%d: link %q: %s", rel(l.file), l.line, l.target, msg)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no links found: the parser is broken")
	}
}

// checkLink returns why target, a link in file, does not resolve; "" when
// it does or when it is not relative.
func checkLink(file, target string, page func(string) (markdown, error)) string {
	u, err := url.Parse(target)
	if err != nil {
		return err.Error()
	}
	if u.Scheme != "" || u.Host != "" || strings.HasPrefix(target, "//") {
		return "" // absolute: not checked
	}
	dest := file
	if u.Path != "" {
		if strings.HasPrefix(u.Path, "/") {
			return "a path from the site root does not resolve on GitHub and locally alike: use a relative path"
		}
		dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(u.Path))
		if _, err := os.Stat(dest); err != nil {
			return fmt.Sprintf("%s does not exist", rel(dest))
		}
	}
	if u.Fragment == "" {
		return ""
	}
	if !strings.HasSuffix(dest, ".md") {
		return "an anchor into a file that is not Markdown"
	}
	md, err := page(dest)
	if err != nil {
		return err.Error()
	}
	if !md.anchors[u.Fragment] {
		return fmt.Sprintf("no heading of %s has the anchor #%s", rel(dest), u.Fragment)
	}
	return ""
}

// TestRunbookLinks checks that the runbook annotation of every alert rule
// names a heading of a docs page that exists.
func TestRunbookLinks(t *testing.T) {
	runbook := regexp.MustCompile(`runbook:\s*"([^"#\s]+)#([^":\s]+)`)
	for _, f := range []string{"configs/prometheus/alerts.yml", "configs/prometheus/alerts_test.yml"} {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for i, line := range strings.Split(string(data), "\n") {
			m := runbook.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			n++
			page := filepath.Join(root, filepath.FromSlash(m[1]))
			md, err := parseMarkdown(page)
			if err != nil {
				t.Errorf("%s:%d: runbook page %s: %v", f, i+1, m[1], err)
				continue
			}
			if !md.anchors[m[2]] {
				t.Errorf("%s:%d: runbook %s#%s: no such heading", f, i+1, m[1], m[2])
			}
		}
		if n == 0 {
			t.Errorf("%s: no runbook annotation found", f)
		}
	}
}

// rel names path from the repository root.
func rel(path string) string {
	r, err := filepath.Rel(root, path)
	if err != nil {
		return path
	}
	return filepath.ToSlash(r)
}
