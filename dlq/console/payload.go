package console

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// Payload kinds.
const (
	kindNone   = "none"
	kindJSON   = "json"
	kindText   = "text"
	kindBinary = "binary"
)

// payload is bytes ready to show: pretty JSON, text, or a hex dump.
type payload struct {
	Kind  string
	Text  string
	Bytes int
}

// maxShown bounds what a page shows of one payload.
const maxShown = 256 << 10

// renderPayload shows b as indented JSON when it is JSON, as text when it
// is printable UTF-8, else as a hex dump.
func renderPayload(b []byte) payload {
	p := payload{Bytes: len(b)}
	switch {
	case b == nil:
		p.Kind = kindNone
	case utf8.Valid(b) && json.Valid(b):
		var buf bytes.Buffer
		if err := json.Indent(&buf, b, "", "  "); err == nil {
			p.Kind, p.Text = kindJSON, buf.String()
		} else {
			p.Kind, p.Text = kindText, string(b)
		}
	case utf8.Valid(b) && printable(b):
		p.Kind, p.Text = kindText, string(b)
	default:
		shown := b
		if len(shown) > maxShown/4 {
			shown = shown[:maxShown/4]
		}
		p.Kind, p.Text = kindBinary, hex.Dump(shown)
	}
	if len(p.Text) > maxShown {
		p.Text = clip(p.Text, maxShown)
	}
	return p
}

// printable reports whether UTF-8 b has no control characters but tab and
// newlines.
func printable(b []byte) bool {
	for _, r := range string(b) {
		if (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0x7f {
			return false
		}
	}
	return true
}

// header is one application header; binary values shown as hex.
type header struct {
	Name, Value string
	Binary      bool
}

func sortedHeaders(h map[string]string) []header {
	out := make([]header, 0, len(h))
	for k, v := range h {
		hd := header{Name: k, Value: v}
		if !utf8.ValidString(v) || !printable([]byte(v)) {
			hd.Value, hd.Binary = hex.EncodeToString([]byte(v)), true
		}
		out = append(out, hd)
	}
	slices.SortFunc(out, func(a, b header) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}
