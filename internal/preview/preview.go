// Package preview renders JSON payloads for people: the console's entry
// page and `redrive dlq show` show a dead letter's JSON through it, and
// `--output json` indents the admin API's answers with it. Each function
// reads its input once, with no recursion and no memory that follows the
// input's nesting (a fixed bit stack of MaxNesting levels lives in the
// walker), so a 20 KB payload nested 10,000 levels deep costs what a flat
// 20 KB payload costs: encoding/json's Indent would write 2 bytes of
// indentation per level on each of its 10,000 lines (200 MB), and its
// scanner allocates a state per level.
package preview

import (
	"errors"
	"io"
	"strconv"
	"unicode/utf8"
)

const (
	// MaxText bounds the text of a preview (JSON): what is left out is
	// named by a marker line saying how many bytes of the input follow.
	MaxText = 256 << 10
	// MaxDepth is how many levels of nesting are indented. A preview shows
	// a non-empty array or object nested deeper as one marker naming its
	// size ("[… 19960 bytes nested deeper than 32 levels …]"); Indent
	// writes it compact (valid JSON, no line breaks).
	MaxDepth = 32
	// MaxNesting is the deepest nesting read as JSON at all: encoding/json's
	// own limit, so that whatever Scan accepts, encoding/json accepts too
	// (a JSON value embedded in the admin API's answers must encode).
	// Deeper input is not JSON here, and is shown as text.
	MaxNesting = 10000
)

// JSON returns src indented as people read it (two spaces a level, as
// json.Indent does), containers nested deeper than MaxDepth shown as one
// marker each, the text cut after limit bytes (MaxText when limit <= 0)
// with a marker line naming how many bytes of src were not shown. ok is
// false when src is not one JSON value (then text is empty). Time is
// linear in len(src), whatever its shape; the text is at most limit
// bytes and the markers.
func JSON(src []byte, limit int) (text string, ok bool) {
	if limit <= 0 {
		limit = MaxText
	}
	w := walker{src: src, mode: human, limit: limit}
	// One allocation for the common case: pretty JSON is rarely more than
	// twice its compact form.
	w.out = make([]byte, 0, min(limit, 2*len(src)+64))
	if !w.run() {
		return "", false
	}
	if w.cut >= 0 {
		w.out = cutMarker(w.out, len(src)-w.cut, limit)
	}
	return string(w.out), true
}

// Text returns src as text, cut after limit bytes (MaxText when limit <=
// 0) on a character boundary with the marker line of JSON. It copies at
// most limit bytes and the marker.
func Text(src []byte, limit int) string {
	if limit <= 0 {
		limit = MaxText
	}
	if len(src) <= limit {
		return string(src)
	}
	n := limit
	for n > 0 && !utf8.RuneStart(src[n]) {
		n--
	}
	out := make([]byte, 0, n+100)
	return string(cutMarker(append(out, src[:n]...), len(src)-n, limit))
}

// cutMarker appends the line that says a text stopped at limit bytes
// with left bytes of its input not shown.
func cutMarker(b []byte, left, limit int) []byte {
	b = append(b, "\n… "...)
	b = strconv.AppendInt(b, int64(left), 10)
	b = append(b, " more bytes not shown: the preview's text stops at "...)
	b = strconv.AppendInt(b, int64(limit), 10)
	return append(b, " bytes"...)
}

// Scan reports whether src is one JSON value as encoding/json reads it
// (at most MaxNesting levels deep), and how deeply it nests (0 for a
// scalar). It allocates nothing.
func Scan(src []byte) (depth int, ok bool) {
	w := walker{src: src, mode: check}
	ok = w.run()
	return w.deepest, ok
}

// Indent writes src, a JSON value, to dst indented as json.Indent with
// prefix "" and indent "  " does, but levels deeper than MaxDepth compact,
// and a line break at the end: the same JSON value, whose size is linear
// in len(src) whatever the nesting. It writes through a 32 KiB buffer. An error is
// dst's, or ErrNotJSON (dst may then have received part of the text).
func Indent(dst io.Writer, src []byte) error {
	w := walker{src: src, mode: exact, dst: dst, out: make([]byte, 0, flushAt+2*MaxDepth+16)}
	ok := w.run()
	w.flush()
	switch {
	case w.err != nil:
		return w.err
	case !ok:
		return ErrNotJSON
	}
	_, err := dst.Write([]byte{'\n'})
	return err
}

// ErrNotJSON is Indent's error for input that is not one JSON value.
var ErrNotJSON = errors.New("preview: not a JSON value (or nested deeper than 10000 levels)")
