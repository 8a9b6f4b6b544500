package dlq

import (
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"
)

// FieldError is bad input naming its field: a query parameter of the
// admin API or a form field of the console, both of which answer it with
// a 400 naming the field.
type FieldError struct {
	// Field names the parameter or form field.
	Field string
	// Msg says what is wrong with it.
	Msg string
}

// Error returns "field: msg".
func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// BadField returns a *FieldError naming field, its message formatted.
func BadField(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// MaxFilterLen is the longest error_class or text filter Filter.Apply
// accepts, in bytes.
const MaxFilterLen = 1024

// CheckText refuses text a client gave for field that cannot be kept or
// matched as given: longer than max bytes, invalid UTF-8, or a control
// character (NUL, an escape, DEL, C1; tabs and line breaks too, unless
// lines). A store cannot keep NUL or invalid UTF-8 in text (PostgreSQL
// refuses them: issue 40 saw a 500), and stored text never holds them
// (CleanText), so nothing would match them anyway.
func CheckText(field, s string, max int, lines bool) error {
	switch {
	case len(s) > max:
		return BadField(field, "longer than %d bytes", max)
	case !utf8.ValidString(s):
		return BadField(field, "not valid UTF-8")
	}
	for _, r := range s {
		if unicode.IsControl(r) && !(lines && (r == '\t' || r == '\n' || r == '\r')) {
			return BadField(field, "contains the control character %U", r)
		}
	}
	return nil
}

// Filter is a listing's filter as a client or a person gives it: the
// parameters of the admin API's listing and replay-all, the fields of the
// console's filter form. The admin API and the console parse it here, in
// one place.
type Filter struct {
	Status, ErrorClass, Text, Since, Until, Order string
	// Group is a failure fingerprint (Fingerprint): the records of one
	// failure group.
	Group string
}

// FormTimeLayouts are the times a person types or an HTML datetime-local
// field sends, besides RFC 3339 (read as UTC); the console accepts them.
var FormTimeLayouts = []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"}

// Apply checks f and sets on q what it gives: ErrorClass and Text (at most
// MaxFilterLen bytes each, UTF-8 without control characters: CheckText); Group (a fingerprint, see ValidFingerprint); Since and Until, RFC 3339 times or, with
// layouts, one of those too (Since before Until); Status when given (a
// valid Status; empty keeps q's); Order when given ("newest" or "oldest";
// empty keeps q.NewestFirst, the caller's default). A bad field is a
// *FieldError naming it.
func (f Filter) Apply(q *Query, layouts ...string) error {
	for _, fl := range []struct{ name, v string }{{"error_class", f.ErrorClass}, {"q", f.Text}} {
		if err := CheckText(fl.name, fl.v, MaxFilterLen, false); err != nil {
			return err
		}
	}
	q.ErrorClass, q.Text = f.ErrorClass, f.Text
	if f.Group != "" && !ValidFingerprint(f.Group) {
		return BadField("group", "%.40q is not a failure fingerprint (32 lower-case hexadecimal digits, as GET /internal/v1/dlq/{dlq}/groups lists them)", f.Group)
	}
	q.Group = f.Group
	var err error
	if q.Since, err = parseTime("since", f.Since, layouts); err != nil {
		return err
	}
	if q.Until, err = parseTime("until", f.Until, layouts); err != nil {
		return err
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Since.Before(q.Until) {
		return BadField("since", "must be before until")
	}
	if f.Status != "" {
		if st := Status(f.Status); st.Valid() {
			q.Status = st
		} else {
			return BadField("status", "%.40q is not one of pending, replaying, replayed, discarded, archived", f.Status)
		}
	}
	switch f.Order {
	case "":
	case "newest":
		q.NewestFirst = true
	case "oldest":
		q.NewestFirst = false
	default:
		return BadField("order", "%.40q is not newest or oldest", f.Order)
	}
	return nil
}

// parseTime reads field's time s: RFC 3339 or one of layouts (UTC).
func parseTime(field, s string, layouts []string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, l := range layouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), nil
		}
	}
	if len(layouts) == 0 {
		return time.Time{}, BadField(field, "%.40q is not an RFC 3339 time such as 2025-01-15T10:30:00Z", s)
	}
	return time.Time{}, BadField(field, "%.40q is not a time such as 2025-01-15T10:30 (UTC) or 2025-01-15T10:30:00Z", s)
}
