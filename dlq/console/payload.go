package console

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"unicode/utf8"

	"github.com/redrive/redrive/broker/wire"
	"github.com/redrive/redrive/internal/preview"
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
	Bytes int64
}

// maxShown bounds what a page shows of one payload.
const maxShown = preview.MaxText

// renderPayload shows b as indented JSON when it is JSON (preview.JSON:
// levels deeper than preview.MaxDepth as one marker each, cut at
// maxShown), as text when it is printable UTF-8, else as a hex dump. Its
// time and memory follow len(b), not the shape of what b holds.
func renderPayload(b []byte) payload {
	p := payload{Bytes: int64(len(b))}
	if b == nil {
		p.Kind = kindNone
		return p
	}
	valid := utf8.Valid(b)
	if valid {
		if text, ok := preview.JSON(b, maxShown); ok {
			p.Kind, p.Text = kindJSON, text
			return p
		}
	}
	switch {
	case valid && printable(b):
		p.Kind, p.Text = kindText, preview.Text(b, maxShown)
	default:
		p.Kind, p.Text = kindBinary, hex.Dump(b[:min(len(b), maxShown/4)])
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

// header is one application header (or property): binary names and
// values shown as hex; Type is its wire type when known.
type header struct {
	Name, Type, Value  string
	Binary, BinaryName bool
}

// typedHeaders returns the headers of a stored wire form with their types,
// in wire order, and its properties; false when there is none (or it does
// not decode).
func typedHeaders(b []byte) (hs, props []header, ok bool) {
	if b == nil {
		return nil, nil, false
	}
	f, err := wire.Decode(b)
	if err != nil {
		return nil, nil, false
	}
	v := f.View()
	for _, fv := range v.Headers {
		h := header{Name: fv.Name, Type: fv.Type, BinaryName: fv.NameEncoding != ""}
		if h.BinaryName {
			raw, _ := base64.StdEncoding.DecodeString(fv.Name)
			h.Name = hex.EncodeToString(raw)
		}
		switch val := fv.Value.(type) {
		case string:
			h.Value = val
			if fv.Encoding != "" {
				raw, _ := base64.StdEncoding.DecodeString(val)
				h.Value, h.Binary = hex.EncodeToString(raw), true
			} else if !printable([]byte(val)) {
				h.Value, h.Binary = hex.EncodeToString([]byte(val)), true
			}
		case nil:
			h.Value = ""
		default: // numbers, bools, nested tables and arrays
			b, _ := json.Marshal(val)
			h.Value = string(b)
		}
		hs = append(hs, h)
	}
	if p := v.Properties; p != nil {
		b, _ := json.Marshal(p)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			props = append(props, header{Name: k, Value: fmt.Sprint(m[k])})
		}
	}
	return hs, props, true
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
