package preview

import (
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The walker: one pass over a JSON text, with no recursion, validating it
// as encoding/json does and writing it as its mode says.

// mode is what a walker does with the tokens it reads.
type mode uint8

const (
	check mode = iota // validate only
	human             // indent, collapse deeper than MaxDepth, stop at limit
	exact             // indent to MaxDepth, compact deeper, everything
)

// flushAt is the buffered output above which Indent writes to dst.
const flushAt = 32 << 10

// indentation is a line break and the indentation of the deepest
// indented level.
var indentation = []byte("\n" + strings.Repeat("  ", MaxDepth))

// walker reads one JSON value from src, writing what its mode says.
type walker struct {
	src  []byte
	i    int
	mode mode

	depth, deepest int
	objects        [MaxNesting/64 + 1]uint64 // bit d: the container at depth d is an object

	out   []byte
	limit int // human: the text's bound
	cut   int // human: the offset of src where the text stopped, -1 while it did not
	// hidden is the depth of the container a preview shows as a marker
	// (0: none), hiddenAt the offset of its opening bracket.
	hidden, hiddenAt int

	dst io.Writer // exact
	err error
}

// run reads the value; false when src is not one JSON value.
func (w *walker) run() bool {
	w.cut = -1
	const (
		value = iota // a value is next
		after        // a value ended
		key          // an object's key is next
	)
	st := value
	for {
		switch st {
		case value:
			w.space()
			if w.i >= len(w.src) {
				return false
			}
			switch c := w.src[w.i]; c {
			case '{', '[':
				empty, ok := w.open(c)
				switch {
				case !ok:
					return false
				case empty:
					st = after
				case c == '{':
					st = key
				}
			case '"':
				if !w.str() {
					return false
				}
				st = after
			default:
				if !w.scalar() {
					return false
				}
				st = after
			}
		case after:
			w.space()
			if w.depth == 0 {
				return w.i == len(w.src)
			}
			if w.i >= len(w.src) {
				return false
			}
			c, obj := w.src[w.i], w.object(w.depth)
			switch {
			case c == ',':
				w.i++
				w.emit([]byte{','}, -1)
				w.newline(w.depth)
				st = value
				if obj {
					st = key
				}
			case c == ']' && !obj, c == '}' && obj:
				w.close(c)
			default:
				return false
			}
		case key:
			w.space()
			if w.i >= len(w.src) || w.src[w.i] != '"' || !w.str() {
				return false
			}
			w.space()
			if w.i >= len(w.src) || w.src[w.i] != ':' {
				return false
			}
			w.i++
			if w.compact(w.depth) {
				w.emit([]byte{':'}, -1)
			} else {
				w.emit([]byte(": "), -1)
			}
			st = value
		}
	}
}

// object reports whether the container at depth d is an object.
func (w *walker) object(d int) bool { return w.objects[d/64]&(1<<(d%64)) != 0 }

// open reads the bracket c at w.i and, when the container is empty, its
// end; false when the nesting is too deep.
func (w *walker) open(c byte) (empty, ok bool) {
	if w.depth == MaxNesting {
		return false, false
	}
	start := w.i
	w.i++
	w.depth++
	w.deepest = max(w.deepest, w.depth)
	bit := uint64(1) << (w.depth % 64)
	if c == '{' {
		w.objects[w.depth/64] |= bit
	} else {
		w.objects[w.depth/64] &^= bit
	}
	w.space()
	end := byte(']')
	if c == '{' {
		end = '}'
	}
	if w.i < len(w.src) && w.src[w.i] == end {
		w.i++
		w.depth--
		w.emit([]byte{c, end}, -1)
		return true, true
	}
	if w.mode == human && w.depth > MaxDepth && w.hidden == 0 {
		w.hidden, w.hiddenAt = w.depth, start
	}
	w.emit([]byte{c}, -1)
	w.newline(w.depth)
	return false, true
}

// close reads the closing bracket c at w.i.
func (w *walker) close(c byte) {
	w.i++
	d := w.depth
	w.depth--
	if w.hidden == d {
		w.hidden = 0
		open := byte('[')
		if c == '}' {
			open = '{'
		}
		var m [96]byte
		b := append(m[:0], open)
		b = append(b, "… "...)
		b = strconv.AppendInt(b, int64(w.i-w.hiddenAt), 10)
		b = append(b, " bytes nested deeper than "...)
		b = strconv.AppendInt(b, MaxDepth, 10)
		b = append(b, " levels …"...)
		b = append(b, c)
		w.emit(b, -1)
		return
	}
	if d <= MaxDepth {
		w.newline(d - 1)
	}
	w.emit([]byte{c}, -1)
}

// compact reports whether the content at depth d is written without line
// breaks (Indent, deeper than MaxDepth).
func (w *walker) compact(d int) bool { return w.mode == exact && d > MaxDepth }

// newline starts a line indented for depth d; none deeper than MaxDepth
// (Indent writes that compact; a preview hides it).
func (w *walker) newline(d int) {
	if d <= MaxDepth {
		w.emit(indentation[:1+2*d], -1)
	}
}

// space skips white space.
func (w *walker) space() {
	for w.i < len(w.src) {
		switch w.src[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// str reads a string at w.i (its opening quote) and writes it as it is.
func (w *walker) str() bool {
	start := w.i
	w.i++
	for w.i < len(w.src) {
		c := w.src[w.i]
		switch {
		case c == '"':
			w.i++
			w.emit(w.src[start:w.i], start)
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if w.i+1 >= len(w.src) {
				return false
			}
			switch w.src[w.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				w.i += 2
			case 'u':
				if w.i+6 > len(w.src) {
					return false
				}
				for _, h := range w.src[w.i+2 : w.i+6] {
					if !isHex(h) {
						return false
					}
				}
				w.i += 6
			default:
				return false
			}
		default:
			w.i++
		}
	}
	return false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// scalar reads a number, true, false or null at w.i and writes it.
func (w *walker) scalar() bool {
	start := w.i
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(w.src)-w.i >= len(lit) && string(w.src[w.i:w.i+len(lit)]) == lit {
			w.i += len(lit)
			w.emit(w.src[start:w.i], start)
			return true
		}
	}
	if w.i < len(w.src) && w.src[w.i] == '-' {
		w.i++
	}
	switch {
	case w.i >= len(w.src):
		return false
	case w.src[w.i] == '0':
		w.i++
	case '1' <= w.src[w.i] && w.src[w.i] <= '9':
		w.digits()
	default:
		return false
	}
	if w.i < len(w.src) && w.src[w.i] == '.' {
		w.i++
		if !w.digits() {
			return false
		}
	}
	if w.i < len(w.src) && (w.src[w.i] == 'e' || w.src[w.i] == 'E') {
		w.i++
		if w.i < len(w.src) && (w.src[w.i] == '+' || w.src[w.i] == '-') {
			w.i++
		}
		if !w.digits() {
			return false
		}
	}
	w.emit(w.src[start:w.i], start)
	return true
}

// digits reads one or more decimal digits.
func (w *walker) digits() bool {
	start := w.i
	for w.i < len(w.src) && '0' <= w.src[w.i] && w.src[w.i] <= '9' {
		w.i++
	}
	return w.i > start
}

// emit writes b, which is src[from:from+len(b)] when from >= 0.
func (w *walker) emit(b []byte, from int) {
	switch {
	case w.mode == check, w.hidden > 0, w.cut >= 0:
		return
	case w.mode == exact:
		w.out = append(w.out, b...)
		if len(w.out) >= flushAt {
			w.flush()
		}
		return
	}
	room := w.limit - len(w.out)
	if len(b) <= room {
		w.out = append(w.out, b...)
		return
	}
	n := room
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	w.out = append(w.out, b[:n]...)
	w.cut = w.i
	if from >= 0 {
		w.cut = from + n
	}
}

// flush writes Indent's buffered text to dst.
func (w *walker) flush() {
	if w.err == nil && len(w.out) > 0 {
		_, w.err = w.dst.Write(w.out)
	}
	w.out = w.out[:0]
}
