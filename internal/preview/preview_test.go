package preview_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/redrive/redrive/internal/preview"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// jsonSeeds are inputs for the table tests and the fuzzers: valid JSON of
// every kind and almost-JSON.
var jsonSeeds = []string{
	`{}`, `[]`, ` [ ] `, `{ }`, `0`, `-0`, `-0.5e+10`, `1E3`, `true`, `false`, `null`, `""`,
	`"a\"b\\c\/d\b\f\n\r\t\u00e9\uD83D\uDE00"`, `{"a":1,"b":[1,2,{"c":null}],"d":{}}`,
	"\t{\n \"k\" : [ true , false ] \r\n}\n", `[[[[[[]]]]]]`, `[{"a":[{"b":[]}]}]`, "\"\xff\xfe\"", `"é ü"`,
	// not JSON
	``, ` `, `{`, `[`, `]`, `[1,]`, `{"a":1,}`, `{"a"}`, `{1:2}`, `[1 2]`, `01`, `1.`, `.5`, `1e`, `-`, `+1`,
	`tru`, `nul`, `"abc`, `"\x"`, `"\u12g4"`, "\"a\x01b\"", `[1]]`, `[1]x`, `{"a":1}{}`, `'a'`, `NaN`, `[}`, `{]`,
}

// TestAgreesWithEncodingJSON: Scan accepts what json.Valid accepts; JSON
// and Indent write what json.Indent writes where no level is deeper than
// MaxDepth.
func TestAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range jsonSeeds {
		agree(t, []byte(s))
	}
}

// FuzzAgreesWithEncodingJSON: the same on generated input.
func FuzzAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { agree(t, b) })
}

func agree(t *testing.T, b []byte) {
	t.Helper()
	depth, ok := preview.Scan(b)
	if valid := json.Valid(b); ok != valid {
		t.Fatalf("Scan(%q) = %v, json.Valid = %v", b, ok, valid)
	}
	text, tok := preview.JSON(b, 1<<30)
	var out bytes.Buffer
	ierr := preview.Indent(&out, b)
	if tok != ok || (ierr == nil) != ok {
		t.Fatalf("%q: Scan %v, JSON %v, Indent %v", b, ok, tok, ierr)
	}
	if !ok {
		return
	}
	var compact, got bytes.Buffer
	_ = json.Compact(&compact, b)
	if err := json.Compact(&got, out.Bytes()); err != nil || got.String() != compact.String() {
		t.Fatalf("Indent(%q) = %q, not the same JSON (%v)", b, out.String(), err)
	}
	if depth > preview.MaxDepth {
		return
	}
	var want bytes.Buffer
	if err := json.Indent(&want, bytes.TrimSpace(b), "", "  "); err != nil {
		t.Fatal(err)
	}
	if text != want.String() || out.String() != want.String()+"\n" {
		t.Fatalf("%q:\n JSON   %q\n Indent %q\n want   %q", b, text, out.String(), want.String())
	}
}

// TestDeepNesting: a container deeper than MaxDepth is one marker in a
// preview and compact JSON in Indent; deeper than MaxNesting is not JSON.
func TestDeepNesting(t *testing.T) {
	deep := testenv.NestedJSON(9999)
	depth, ok := preview.Scan(deep)
	if !ok || depth != 9999 {
		t.Fatalf("Scan(9,999 deep) = %d, %v", depth, ok)
	}
	text, ok := preview.JSON(deep, 0)
	marker := "[… " + itoa(2*(9999-preview.MaxDepth)) + " bytes nested deeper than 32 levels …]"
	if !ok || !strings.Contains(text, marker) || strings.Count(text, "\n") != 2*preview.MaxDepth || len(text) > 3000 {
		t.Fatalf("JSON(9,999 deep) = %v, %d bytes, %d lines:\n%s", ok, len(text), strings.Count(text, "\n"), text)
	}
	var out bytes.Buffer
	if err := preview.Indent(&out, deep); err != nil || out.Len() > len(deep)+4*preview.MaxDepth*preview.MaxDepth {
		t.Fatalf("Indent(9,999 deep) = %v, %d bytes", err, out.Len())
	}
	if !json.Valid(out.Bytes()) {
		t.Fatal("Indent(9,999 deep) is not JSON")
	}
	// Objects collapse with their own brackets; the marker counts the
	// container's bytes.
	obj := []byte(strings.Repeat(`{"a":`, 40) + "1" + strings.Repeat("}", 40))
	text, ok = preview.JSON(obj, 0)
	if !ok || !strings.Contains(text, `"a": {… 49 bytes nested deeper than 32 levels …}`) {
		t.Fatalf("JSON(40 objects deep) = %v\n%s", ok, text)
	}
	// Empty containers are shown as they are at any depth.
	text, _ = preview.JSON([]byte(strings.Repeat("[", 33)+"[]"+strings.Repeat("]", 33)), 0)
	if !strings.Contains(text, "[… 4 bytes nested deeper than 32 levels …]") {
		t.Fatalf("33 deep around an empty array:\n%s", text)
	}
	for _, d := range []int{preview.MaxNesting, preview.MaxNesting + 1} {
		b := testenv.NestedJSON(d)
		_, ok := preview.Scan(b)
		if want := json.Valid(b); ok != want || ok != (d <= preview.MaxNesting) {
			t.Errorf("Scan(%d deep) = %v, json.Valid %v", d, ok, want)
		}
	}
}

// TestLimit: a preview stops at its limit, on a character boundary, and
// says how many bytes of the input were not shown.
func TestLimit(t *testing.T) {
	src := []byte(`{"é":"` + strings.Repeat("é", 100) + `","n":[1,2,3]}`)
	for _, limit := range []int{1, 10, 11, 12, 100, 150} {
		text, ok := preview.JSON(src, limit)
		body, marker, cut := strings.Cut(text, "\n… ")
		if !ok || !cut || len(body) > limit || len(body) < limit-3 || !strings.Contains(marker, "more bytes not shown") {
			t.Fatalf("JSON(limit %d) = %v %q", limit, ok, text)
		}
		if !utf8Valid(body) {
			t.Errorf("JSON(limit %d) cut inside a character: %q", limit, body)
		}
	}
	// The count: what follows the cut in the input.
	text, _ := preview.JSON([]byte(`["`+strings.Repeat("a", 50)+`"]`), 12)
	if !strings.HasSuffix(text, "\n… 45 more bytes not shown: the preview's text stops at 12 bytes") {
		t.Errorf("cut inside a string: %q", text)
	}
	// Invalid after the cut is still not JSON.
	if _, ok := preview.JSON([]byte(`["`+strings.Repeat("a", 50)+`"]]`), 12); ok {
		t.Error("invalid JSON after the cut read as JSON")
	}
	// Enough room: no marker.
	if text, _ := preview.JSON([]byte(`[1]`), 0); text != "[\n  1\n]" {
		t.Errorf("JSON([1]) = %q", text)
	}
}

// TestIndentStreams: Indent writes through its buffer, so a large input
// reaches the writer in pieces, and a writer's error is returned.
func TestIndentStreams(t *testing.T) {
	src := testenv.FlatJSON(200 << 10)
	var w countWriter
	if err := preview.Indent(&w, src); err != nil || w.writes < 4 || w.max > 40<<10 {
		t.Fatalf("Indent of 200 KB: %v, %d writes, largest %d", err, w.writes, w.max)
	}
	if err := preview.Indent(failWriter{}, src); err == nil || !strings.Contains(err.Error(), "full") {
		t.Errorf("Indent to a failing writer = %v", err)
	}
}

// BenchmarkJSON: a preview of issue 40's 20 KB payload nested 9,999
// levels against a flat 20 KB payload.
func BenchmarkJSON(b *testing.B) {
	for _, p := range []struct {
		name string
		src  []byte
	}{{"flat", testenv.FlatJSON(20 << 10)}, {"deep", testenv.NestedJSON(9999)}} {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(p.src)))
			for b.Loop() {
				if _, ok := preview.JSON(p.src, 0); !ok {
					b.Fatal("not JSON")
				}
			}
		})
	}
}

type countWriter struct{ writes, max int }

func (w *countWriter) Write(p []byte) (int, error) {
	w.writes++
	w.max = max(w.max, len(p))
	return len(p), nil
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errFull }

var errFull = &json.UnsupportedValueError{Str: "disk full"}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\ufffd") == s }

// TestText: text is cut like JSON, with the same marker, on a character
// boundary.
func TestText(t *testing.T) {
	if got := preview.Text([]byte("short"), 0); got != "short" {
		t.Errorf("Text(short) = %q", got)
	}
	got := preview.Text([]byte("aé"+strings.Repeat("b", 10)), 2)
	if got != "a\n… 12 more bytes not shown: the preview's text stops at 2 bytes" {
		t.Errorf("Text cut inside é = %q", got)
	}
}
