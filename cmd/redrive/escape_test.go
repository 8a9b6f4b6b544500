package main

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, é ü 漢字":              "plain text, é ü 漢字",
		"osc 52 \x1b]52;c;ZXZpbA==\x07":   `osc 52 \x1b]52;c;ZXZpbA==\a`,
		"clear \x1b[2J\x1b[H":             `clear \x1b[2J\x1b[H`,
		"tab\tnewline\ncr\r":              `tab\tnewline\ncr\r`,
		"nul \x00 del \x7f":               `nul \x00 del \x7f`,
		"c1 csi \u009b2J":                 `c1 csi \u009b2J`,
		"bidi \u202egnp.exe\u202c \u2066": `bidi \u202egnp.exe\u202c \u2066`,
		"invalid \xff\xfe utf-8":          `invalid \xff\xfe utf-8`,
		`backslash \x1b stays`:            `backslash \x1b stays`,
		"":                                "",
	} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %q, want %q", in, got, want)
		}
	}
	if got := printableLines("{\n  \"a\": \"\x1b[2J\"\n}"); got != "{\n  \"a\": \"\\x1b[2J\"\n}" {
		t.Errorf("printableLines kept a control character or lost a line break: %q", got)
	}
}

// assertTerminalSafe fails when out holds a character that could control
// a terminal (newlines are allowed).
func assertTerminalSafe(t *testing.T, what, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Errorf("%s: output is not valid UTF-8: %q", what, out)
	}
	for _, r := range out {
		if r != '\n' && unsafeRune(r) {
			t.Errorf("%s: output holds %U:\n%q", what, r, out)
			return
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("%s: output holds an escape", what)
	}
}

func FuzzPrintable(f *testing.F) {
	for _, s := range []string{"a", "\x1b]52;c;x\x07", "\u202e", "\xff", "é\u009b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p := printable(s)
		assertTerminalSafe(t, "printable", p)
		if isPrintable(s) != (p == s) {
			t.Errorf("printable(%q) = %q, but isPrintable = %v", s, p, isPrintable(s))
		}
		assertTerminalSafe(t, "printableLines", strings.ReplaceAll(printableLines(s), "\n", ""))
	})
}
