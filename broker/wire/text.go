package wire

import (
	"strconv"
	"strings"
	"time"
)

// Text renders a header value as the string view shows it: strings and
// byte arrays as their bytes, numbers and booleans as Go prints them, a
// decimal as "12.34", a timestamp as RFC 3339 UTC, void as "". Nested
// tables and arrays have no text form (false).
func Text(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case []byte:
		return string(v), true
	case nil:
		return "", true
	case bool:
		return strconv.FormatBool(v), true
	case int8:
		return strconv.FormatInt(int64(v), 10), true
	case int16:
		return strconv.FormatInt(int64(v), 10), true
	case int32:
		return strconv.FormatInt(int64(v), 10), true
	case int64:
		return strconv.FormatInt(v, 10), true
	case uint8:
		return strconv.FormatUint(uint64(v), 10), true
	case uint16:
		return strconv.FormatUint(uint64(v), 10), true
	case uint32:
		return strconv.FormatUint(uint64(v), 10), true
	case float32:
		return strconv.FormatFloat(float64(v), 'g', -1, 32), true
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64), true
	case Decimal:
		return v.String(), true
	case time.Time:
		return FormatTime(v), true
	}
	return "", false
}

// timeLayout is the layout of FormatTime.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// FormatTime renders t as the x-redrive-* time headers carry it: RFC 3339
// in UTC with milliseconds (truncated), as t.UTC().Format(timeLayout) does.
// Every retry and dead letter formats two: the fixed layout is written
// digit by digit, a fifth of Format's time; years outside 0-9999 take
// Format's way.
func FormatTime(t time.Time) string {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.Format(timeLayout)
	}
	hour, minute, sec := t.Clock()
	b := []byte("0000-00-00T00:00:00.000Z")
	digits(b[0:4], year)
	digits(b[5:7], int(month))
	digits(b[8:10], day)
	digits(b[11:13], hour)
	digits(b[14:16], minute)
	digits(b[17:19], sec)
	digits(b[20:23], t.Nanosecond()/int(time.Millisecond))
	return string(b)
}

// digits writes n, zero-padded, into b (n < 10^len(b)).
func digits(b []byte, n int) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
}

// ParseTime parses an RFC 3339 time header; the zero time when s is not
// one (a foreign producer's header never fails a delivery).
func ParseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// String renders d in decimal notation: Decimal{2, 1234} is "12.34".
func (d Decimal) String() string {
	neg := d.Value < 0
	digits := strconv.FormatUint(uint64(abs64(int64(d.Value))), 10)
	if s := int(d.Scale); s > 0 {
		if len(digits) <= s {
			digits = strings.Repeat("0", s-len(digits)+1) + digits
		}
		digits = digits[:len(digits)-s] + "." + digits[len(digits)-s:]
	}
	if neg {
		return "-" + digits
	}
	return digits
}

func abs64(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// TypeName names the type of a header value as the API shows it: void,
// bool, int8, uint8, int16, uint16, int32, uint32, int64, float32,
// float64, decimal, timestamp, string, bytes, table, array; "unknown" for
// a value of no wire type.
func TypeName(v any) string {
	switch v.(type) {
	case nil:
		return "void"
	case bool:
		return "bool"
	case int8:
		return "int8"
	case uint8:
		return "uint8"
	case int16:
		return "int16"
	case uint16:
		return "uint16"
	case int32:
		return "int32"
	case uint32:
		return "uint32"
	case int64:
		return "int64"
	case float32:
		return "float32"
	case float64:
		return "float64"
	case Decimal:
		return "decimal"
	case time.Time:
		return "timestamp"
	case string:
		return "string"
	case []byte:
		return "bytes"
	case Table:
		return "table"
	case []any:
		return "array"
	}
	return "unknown"
}
