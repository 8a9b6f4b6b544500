package termtext

import (
	"strings"
	"testing"
)

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"plain, é 漢字":                   "plain, é 漢字",
		"osc 52 \x1b]52;c;ZXZpbA==\x07": `osc 52 \x1b]52;c;ZXZpbA==\a`,
		"clear \x1b[2J":                 `clear \x1b[2J`,
		"c1 \u009b2J":                   `c1 \u009b2J`,
		"bidi \u202egnp.exe":            `bidi \u202egnp.exe`,
		"invalid \xff":                  `invalid \xff`,
		"":                              "",
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
		if IsPrintable(in) != (in == want) {
			t.Errorf("IsPrintable(%q) = %v", in, IsPrintable(in))
		}
	}
	if got := Lines("a\n\x1b[2J"); got != "a\n\\x1b[2J" {
		t.Errorf("Lines = %q", got)
	}
}

func FuzzPrintable(f *testing.F) {
	for _, s := range []string{"a", "\x1b]52;c;x\x07", "\u202e", "\xff", "é\u009b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, r := range strings.ReplaceAll(Lines(s), "\n", "") + Printable(s) {
			if UnsafeRune(r) {
				t.Fatalf("%q escapes to something holding %U", s, r)
			}
		}
	})
}
