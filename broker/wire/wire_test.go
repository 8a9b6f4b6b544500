package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
)

// every holds a value of every wire type.
func every() Table {
	ts := time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC)
	return Table{
		{"void", nil},
		{"bool-t", true},
		{"bool-f", false},
		{"int8", int8(-8)},
		{"uint8", uint8(200)},
		{"int16", int16(-1600)},
		{"uint16", uint16(60000)},
		{"int32", int32(-320000)},
		{"uint32", uint32(4000000000)},
		{"int64", int64(math.MinInt64)},
		{"float32", float32(1.25)},
		{"float64", math.Pi},
		{"nan", math.NaN()},
		{"decimal", Decimal{Scale: 2, Value: -1234}},
		{"timestamp", ts},
		{"string", "café"},
		{"string-bin", "\xff\x00"},
		{"bytes", []byte{0, 1, 0xff}},
		{"bytes-empty", []byte{}},
		{"table", Table{{"inner", int32(1)}, {"deeper", Table{{"x", "y"}}}}},
		{"array", []any{int32(1), "two", []byte("3"), nil, []any{true}, Table{{"k", int64(5)}}}},
		{"", "empty name"},
		{"\x00\xffbinary-name", []byte("v")},
		{"dup", []byte("first")},
		{"dup", []byte("second")},
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    Form
	}{
		{"empty", Form{}},
		{"headers only", Form{Headers: every()}},
		{"properties, all set", Form{Headers: Table{{"a", int16(1)}}, Props: &Properties{
			ContentType: "application/json", ContentEncoding: "gzip", DeliveryMode: 2, Priority: 9,
			CorrelationID: "corr", ReplyTo: "reply", Expiration: "60000", Timestamp: time.Unix(1700000000, 0).UTC(),
			Type: "order.created", UserID: "guest", AppID: "billing",
		}}},
		{"properties, none set", Form{Props: &Properties{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Encode(tc.f)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			got, err := Decode(b)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !equalForm(got, tc.f) {
				t.Fatalf("round trip:\n got %#v\nwant %#v", got, tc.f)
			}
			again, _ := Encode(got)
			if !bytes.Equal(again, b) {
				t.Errorf("re-encoding differs:\n%x\n%x", again, b)
			}
		})
	}
}

// equalForm compares like reflect.DeepEqual, NaN equal to NaN and times
// by instant.
func equalForm(a, b Form) bool {
	if (a.Props == nil) != (b.Props == nil) {
		return false
	}
	if a.Props != nil {
		pa, pb := *a.Props, *b.Props
		if !pa.Timestamp.Equal(pb.Timestamp) {
			return false
		}
		pa.Timestamp, pb.Timestamp = time.Time{}, time.Time{}
		if pa != pb {
			return false
		}
	}
	return equalValue(a.Headers, b.Headers)
}

func equalValue(a, b any) bool {
	switch av := a.(type) {
	case Table:
		bv, ok := b.(Table)
		if !ok || len(av) != len(bv) {
			return false
		}
		for i := range av {
			if av[i].Name != bv[i].Name || !equalValue(av[i].Value, bv[i].Value) {
				return false
			}
		}
		return true
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for i := range av {
			if !equalValue(av[i], bv[i]) {
				return false
			}
		}
		return true
	case float64:
		bv, ok := b.(float64)
		return ok && (av == bv || math.IsNaN(av) && math.IsNaN(bv))
	case time.Time:
		bv, ok := b.(time.Time)
		return ok && av.Equal(bv)
	case []byte:
		bv, ok := b.([]byte)
		return ok && bytes.Equal(av, bv) && (av == nil) == (bv == nil)
	}
	return reflect.DeepEqual(a, b)
}

func TestEncodeRefuses(t *testing.T) {
	deep := any("leaf")
	for range MaxDepth + 1 {
		deep = []any{deep}
	}
	for name, f := range map[string]Form{
		"no wire type": {Headers: Table{{"n", 42}}}, // int is not a wire type: int32 or int64
		"too deep":     {Headers: Table{{"n", deep}}},
	} {
		if _, err := Encode(f); err == nil {
			t.Errorf("%s: Encode succeeded", name)
		}
	}
}

func TestDecodeMalformed(t *testing.T) {
	good, err := Encode(Form{Headers: every(), Props: &Properties{ContentType: "x", Timestamp: time.Unix(5, 0)}})
	if err != nil {
		t.Fatal(err)
	}
	// Every strict prefix is truncated.
	for n := range len(good) {
		if _, err := Decode(good[:n]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("Decode of %d of %d bytes: %v, want ErrMalformed", n, len(good), err)
		}
	}
	for name, b := range map[string][]byte{
		"trailing":      append(append([]byte{}, good...), 0),
		"version 2":     {2, 0, 0},
		"bad flags":     {1, 7, 0},
		"unknown type":  {1, 0, 1, 1, 'n', 'Z'},
		"bad bool":      {1, 0, 1, 1, 'n', 't', 2},
		"huge count":    {1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"huge string":   {1, 0, 1, 0xff, 0xff, 0x03, 'a'},
		"ts flag":       {1, 1, 0, 0, 0, 0, 0, 0, 0, 9},
		"nested table":  append([]byte{1, 0, 1, 1, 'n'}, bytes.Repeat([]byte{'F', 1, 0}, MaxDepth+2)...),
		"nested arrays": append([]byte{1, 0, 1, 1, 'n'}, bytes.Repeat([]byte{'A', 1}, MaxDepth+2)...),
	} {
		if _, err := Decode(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	good, _ := Encode(Form{Headers: every(), Props: &Properties{ContentType: "x"}})
	f.Add(good)
	f.Add([]byte{1, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		form, err := Decode(b)
		if err != nil {
			return
		}
		again, err := Encode(form)
		if err != nil {
			t.Fatalf("a decoded form does not encode: %v", err)
		}
		back, err := Decode(again)
		if err != nil || !equalForm(back, form) {
			t.Fatalf("re-decoding: %v", err)
		}
	})
}

func TestPatch(t *testing.T) {
	in := Table{
		{"b", int16(2)},
		{broker.HeaderReason, "permanent"},
		{"a", []byte("1")},
		{broker.HeaderAttempt, "1"},
		{"a", []byte("2")},
		{broker.HeaderRemainingDelay, int64(5)},
	}
	got := in.Patch(map[string]string{broker.HeaderAttempt: "2", broker.HeaderError: "boom"}, broker.HeaderReason, broker.HeaderRemainingDelay)
	want := Table{
		{"b", int16(2)},
		{"a", []byte("1")},
		{"a", []byte("2")},
		{broker.HeaderAttempt, "2"},
		{broker.HeaderError, "boom"},
	}
	if !equalValue(got, want) {
		t.Errorf("Patch = %#v\nwant %#v", got, want)
	}
	if !equalValue(in[0], Field{"b", int16(2)}) || len(in) != 6 {
		t.Error("Patch changed its input")
	}
	if app := got.App(); !equalValue(app, want[:3]) {
		t.Errorf("App = %#v", app)
	}
}

func TestStringsAndText(t *testing.T) {
	h := every().Strings()
	want := map[string]string{
		"void": "", "bool-t": "true", "bool-f": "false", "int8": "-8", "uint8": "200", "int16": "-1600",
		"uint16": "60000", "int32": "-320000", "uint32": "4000000000", "int64": "-9223372036854775808",
		"float32": "1.25", "float64": "3.141592653589793", "nan": "NaN", "decimal": "-12.34",
		"timestamp": "2025-01-15T10:30:00.000Z", "string": "café", "string-bin": "\xff\x00",
		"bytes": "\x00\x01\xff", "bytes-empty": "", "": "empty name", "\x00\xffbinary-name": "v", "dup": "second",
	}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("Strings =\n%q\nwant\n%q", h, want)
	}
	for d, s := range map[Decimal]string{{0, 5}: "5", {2, 5}: "0.05", {3, -5}: "-0.005", {1, 120}: "12.0", {2, math.MinInt32}: "-21474836.48"} {
		if got := d.String(); got != s {
			t.Errorf("%#v.String() = %q, want %q", d, got, s)
		}
	}
}

func TestView(t *testing.T) {
	f := Form{Headers: every(), Props: &Properties{ContentType: "text/plain", DeliveryMode: 2, Timestamp: time.Unix(1700000000, 0)}}
	b, err := json.Marshal(f.View())
	if err != nil {
		t.Fatalf("the view does not encode: %v", err)
	}
	s := string(b)
	for _, want := range []string{
		`"properties":{"content_type":"text/plain","delivery_mode":2,"timestamp":"2023-11-14T22:13:20Z"}`,
		`{"name":"int16","type":"int16","value":-1600}`,
		`{"name":"uint32","type":"uint32","value":4000000000}`,
		`{"name":"nan","type":"float64","value":"NaN"}`,
		`{"name":"decimal","type":"decimal","value":"-12.34"}`,
		`{"name":"timestamp","type":"timestamp","value":"2025-01-15T10:30:00.000Z"}`,
		`{"name":"string-bin","type":"string","value":"/wA=","encoding":"base64"}`,
		`{"name":"void","type":"void","value":null}`,
		`{"name":"table","type":"table","value":[{"name":"inner","type":"int32","value":1},{"name":"deeper","type":"table","value":[{"name":"x","type":"string","value":"y"}]}]}`,
		`{"name":"AP9iaW5hcnktbmFtZQ==","name_encoding":"base64","type":"bytes","value":"v"}`,
		`{"name":"array","type":"array","value":[{"type":"int32","value":1},{"type":"string","value":"two"}`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("view lacks %s:\n%s", want, s)
		}
	}
	if strings.Index(s, `"first"`) > strings.Index(s, `"second"`) {
		t.Error("the view does not keep wire order")
	}
}

func TestFormatParseTime(t *testing.T) {
	ts := time.Date(2025, 1, 15, 11, 45, 0, 987654321, time.FixedZone("X", -5*3600))
	s := FormatTime(ts)
	if want := "2025-01-15T16:45:00.987Z"; s != want {
		t.Errorf("FormatTime = %q, want %q", s, want)
	}
	if got := ParseTime(s); !got.Equal(ts.Truncate(time.Millisecond)) {
		t.Errorf("ParseTime(%q) = %v", s, got)
	}
	if got := ParseTime("2025-01-15T10:30:00Z"); !got.Equal(time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC)) {
		t.Errorf("ParseTime without fraction = %v", got)
	}
	for _, bad := range []string{"", "now", "2025-01-15", "1736937000"} {
		if got := ParseTime(bad); !got.IsZero() {
			t.Errorf("ParseTime(%q) = %v, want zero", bad, got)
		}
	}
}

// FormatTime writes its layout by hand: it must give what Format gives,
// at the edges of its range and beyond them.
func TestFormatTimeAsFormat(t *testing.T) {
	times := []time.Time{
		{},
		time.Unix(0, 0),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 6, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2024, 2, 29, 23, 59, 59, 999999, time.FixedZone("Y", 14*3600)),
		time.Date(2025, 1, 15, 11, 45, 0, 1_000_000, time.FixedZone("X", -5*3600)),
		time.Now(),
	}
	for i := range 1000 { // spread over years 0-9999 and the day
		times = append(times, time.Unix(int64(i)*314159265359%253402300799-62135596800, int64(i)*7919*104729%1e9))
	}
	for _, ts := range times {
		if got, want := FormatTime(ts), ts.UTC().Format(timeLayout); got != want {
			t.Fatalf("FormatTime(%v) = %q, want %q", ts, got, want)
		}
	}
}

func BenchmarkFormatTime(b *testing.B) {
	ts := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		FormatTime(ts)
	}
}

// FuzzFormatTime checks FormatTime against Format at any instant and zone.
func FuzzFormatTime(f *testing.F) {
	f.Add(int64(0), int64(0), 0)
	f.Add(int64(1736937000), int64(987654321), -5*3600)
	f.Add(int64(253402300799), int64(999999999), 14*3600) // 9999-12-31T23:59:59.999Z
	f.Add(int64(-62135596800), int64(0), 0)               // 0001-01-01
	f.Fuzz(func(t *testing.T, sec, nsec int64, offset int) {
		ts := time.Unix(sec, nsec).In(time.FixedZone("Z", offset%(24*3600)))
		if got, want := FormatTime(ts), ts.UTC().Format(timeLayout); got != want {
			t.Fatalf("FormatTime(%v) = %q, want %q", ts, got, want)
		}
	})
}
