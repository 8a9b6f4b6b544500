package console

import (
	"net/url"
	"strings"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/operate"
)

// bad is a 400 naming its field.
func bad(field, format string, args ...any) error { return dlq.BadField(field, format, args...) }

// dlqName checks the {name} of a path.
func dlqName(v string) (string, error) {
	if !dlq.ValidName(v) {
		return "", bad("dlq", "%.80q is not a DLQ name", v)
	}
	return v, nil
}

// entryID checks an {id} of a path.
func entryID(field, v string) (string, error) {
	if !dlq.ValidID(v) {
		return "", bad(field, "%.80q is not an id ([A-Za-z0-9][A-Za-z0-9._-]{0,127})", v)
	}
	return v, nil
}

// filter is the entries page's filter, as given (for the form and links).
type filter struct {
	Status, ErrorClass, Text, Since, Until, Order string
	// Group is a failure fingerprint.
	Group string
}

// Query returns the filter's query string, without a cursor.
func (f filter) Query() url.Values {
	v := url.Values{}
	for k, s := range map[string]string{"status": f.Status, "error_class": f.ErrorClass, "q": f.Text, "since": f.Since, "until": f.Until, "order": f.Order, "group": f.Group} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v
}

// Active reports whether the filter selects anything narrower than the
// default listing.
func (f filter) Active() bool {
	return f.Status != "" || f.ErrorClass != "" || f.Text != "" || f.Since != "" || f.Until != "" || f.Group != ""
}

// one returns the single value of field in v; repeated is bad input.
func one(v url.Values, field string) (string, error) {
	vs := v[field]
	switch len(vs) {
	case 0:
		return "", nil
	case 1:
		return strings.TrimSpace(vs[0]), nil
	}
	return "", bad(field, "given %d times", len(vs))
}

// readFilter reads the filter fields (error_class, q, since, until, group, and
// with listing also status, order) of v into q.
func readFilter(v url.Values, q *dlq.Query, listing bool) (filter, error) {
	var f filter
	var err error
	type field struct {
		name string
		dst  *string
	}
	fields := []field{{"error_class", &f.ErrorClass}, {"q", &f.Text}, {"since", &f.Since}, {"until", &f.Until}, {"group", &f.Group}}
	if listing {
		fields = append(fields, field{"status", &f.Status}, field{"order", &f.Order})
	}
	for _, fl := range fields {
		if *fl.dst, err = one(v, fl.name); err != nil {
			return f, err
		}
	}
	if listing {
		q.NewestFirst = true // the default order
	}
	return f, dlq.Filter(f).Apply(q, dlq.FormTimeLayouts...)
}

// parseRate reads the replay-all rate: empty = the server's default (-1),
// else operate.ParseReplayRate.
func parseRate(s string) (float64, error) {
	if s == "" {
		return -1, nil
	}
	f, err := operate.ParseReplayRate(s)
	if err != nil {
		return 0, bad("rate", "%v", err)
	}
	return f, nil
}
