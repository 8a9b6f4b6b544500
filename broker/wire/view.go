package wire

import (
	"encoding/base64"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// View is a Form as the admin API shows it (JSON): every header with its
// type, in wire order, and the properties.
type View struct {
	Properties *PropertiesView `json:"properties,omitempty"`
	Headers    []FieldView     `json:"headers"`
}

// PropertiesView shows the properties that are set.
type PropertiesView struct {
	ContentType     string     `json:"content_type,omitempty"`
	ContentEncoding string     `json:"content_encoding,omitempty"`
	DeliveryMode    uint8      `json:"delivery_mode,omitempty"`
	Priority        uint8      `json:"priority,omitempty"`
	CorrelationID   string     `json:"correlation_id,omitempty"`
	ReplyTo         string     `json:"reply_to,omitempty"`
	Expiration      string     `json:"expiration,omitempty"`
	Timestamp       *time.Time `json:"timestamp,omitempty"`
	Type            string     `json:"type,omitempty"`
	UserID          string     `json:"user_id,omitempty"`
	AppID           string     `json:"app_id,omitempty"`
}

// FieldView is one header: its name (base64 with name_encoding "base64"
// when it is not UTF-8) and its value.
type FieldView struct {
	Name         string `json:"name"`
	NameEncoding string `json:"name_encoding,omitempty"`
	ValueView
}

// ValueView is a typed value. Type is a [TypeName]. Value is a JSON
// number for integers and floats (a string for NaN and infinities), a
// string for decimals ("12.34"), timestamps (RFC 3339), strings and byte
// arrays (base64 with encoding "base64" when not UTF-8), a bool, null for
// void, a list of FieldView for a table and of ValueView for an array.
type ValueView struct {
	Type     string `json:"type"`
	Value    any    `json:"value"`
	Encoding string `json:"encoding,omitempty"`
}

// View returns f's view.
func (f Form) View() View {
	v := View{Headers: tableView(f.Headers)}
	if p := f.Props; p != nil {
		pv := &PropertiesView{
			ContentType: p.ContentType, ContentEncoding: p.ContentEncoding, DeliveryMode: p.DeliveryMode,
			Priority: p.Priority, CorrelationID: p.CorrelationID, ReplyTo: p.ReplyTo, Expiration: p.Expiration,
			Type: p.Type, UserID: p.UserID, AppID: p.AppID,
		}
		if !p.Timestamp.IsZero() {
			ts := p.Timestamp.UTC()
			pv.Timestamp = &ts
		}
		v.Properties = pv
	}
	return v
}

func tableView(t Table) []FieldView {
	out := make([]FieldView, 0, len(t))
	for _, f := range t {
		fv := FieldView{Name: f.Name, ValueView: valueView(f.Value)}
		if !utf8.ValidString(f.Name) {
			fv.Name, fv.NameEncoding = base64.StdEncoding.EncodeToString([]byte(f.Name)), "base64"
		}
		out = append(out, fv)
	}
	return out
}

func valueView(v any) ValueView {
	out := ValueView{Type: TypeName(v)}
	switch v := v.(type) {
	case nil:
	case string:
		out.Value, out.Encoding = textOrBase64(v)
	case []byte:
		out.Value, out.Encoding = textOrBase64(string(v))
	case float32:
		out.Value = floatValue(float64(v), 32)
	case float64:
		out.Value = floatValue(v, 64)
	case Table:
		out.Value = tableView(v)
	case []any:
		items := make([]ValueView, 0, len(v))
		for _, e := range v {
			items = append(items, valueView(e))
		}
		out.Value = items
	case bool, int8, uint8, int16, uint16, int32, uint32, int64:
		out.Value = v
	default:
		out.Value, _ = Text(v)
	}
	return out
}

func textOrBase64(s string) (string, string) {
	if utf8.ValidString(s) {
		return s, ""
	}
	return base64.StdEncoding.EncodeToString([]byte(s)), "base64"
}

// floatValue is f as a JSON number, or its name when JSON has none.
func floatValue(f float64, bits int) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, bits)
	}
	if bits == 32 {
		return float32(f)
	}
	return f
}
