package testenv

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// NestedJSON returns depth arrays nested in each other, "[[[…]]]": 2 ×
// depth bytes of valid JSON (encoding/json reads up to 10,000 levels).
// Issue 40's payload, 9,999 deep, is 20 KB.
func NestedJSON(depth int) []byte {
	return []byte(strings.Repeat("[", depth) + strings.Repeat("]", depth))
}

// FlatJSON returns a JSON object of at least size bytes, one level deep:
// fields of strings, numbers, booleans and nulls, as an ordinary message
// has, to compare a payload's cost against.
func FlatJSON(size int) []byte {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; b.Len() < size-1; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		n := strconv.Itoa(i)
		switch i % 4 {
		case 0:
			b.WriteString(`"name_` + n + `":"value number ` + n + ` with some text"`)
		case 1:
			b.WriteString(`"amount_` + n + `":` + n + `.25`)
		case 2:
			b.WriteString(`"flag_` + n + `":true`)
		default:
			b.WriteString(`"none_` + n + `":null`)
		}
	}
	b.WriteByte('}')
	return []byte(b.String())
}

// Hostile are values anyone can send in a path segment, a parameter, a
// form or body field or a header: NUL and other control characters,
// terminal escapes, C1 controls, invalid UTF-8, a bidi override, path
// traversal, markup, SQL, a template action, and a 100 KB value.
var Hostile = []string{
	"\x00", "a\x00b", "\x01", "tab\there", "line\nbreak", "\x1b[2J\x1b]52;c;ZXZpbA==\x07", "\x7f", "\u0085", "\u009b31m",
	"\xff\xfe", "bad \xc3", "\u202eexe.gnp", "../../etc/passwd", "..", "%2e%2e%2f", "a/../b", "<script>alert(1)</script>",
	"' OR '1'='1", "{{.}}", strings.Repeat("x", 100<<10),
}

// Controlled reports whether v is text every filter refuses
// (dlq.CheckText): longer than max bytes, invalid UTF-8, or with a
// control character.
func Controlled(v string, max int) bool {
	return len(v) > max || !utf8.ValidString(v) || strings.IndexFunc(v, unicode.IsControl) >= 0
}
