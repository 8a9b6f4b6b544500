package console

import (
	"fmt"
	"net/url"
	"strings"
)

// TraceIDPlaceholder is what Config.TraceLink must contain: the entry
// page puts the trace id in its place.
const TraceIDPlaceholder = "{trace_id}"

// checkTraceLink reports why a trace link template is unusable: it must
// contain TraceIDPlaceholder and be an http or https URL with a host.
func checkTraceLink(tmpl string) error {
	if !strings.Contains(tmpl, TraceIDPlaceholder) {
		return fmt.Errorf("console: Config.TraceLink: %q has no %s", tmpl, TraceIDPlaceholder)
	}
	u, err := url.Parse(strings.ReplaceAll(tmpl, TraceIDPlaceholder, "0"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("console: Config.TraceLink: %q is not an http or https URL", tmpl)
	}
	return nil
}

// traceID returns the trace id of a message's W3C traceparent header
// ("00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>"), "" when it
// has none or one that is not valid: a header is the sender's, untrusted,
// so only 32 lowercase hex digits, not all zero, are ever shown.
func traceID(headers map[string]string) string {
	tp, ok := headers["traceparent"]
	if !ok || len(tp) < 55 {
		return ""
	}
	version, id, parent, flags := tp[0:2], tp[3:35], tp[36:52], tp[53:55]
	switch {
	case tp[2] != '-' || tp[35] != '-' || tp[52] != '-':
		return ""
	case !lowerHex(version) || version == "ff" || !lowerHex(id) || !lowerHex(parent) || !lowerHex(flags):
		return ""
	case version == "00" && len(tp) != 55:
		return ""
	case len(tp) > 55 && tp[55] != '-': // a later version may append fields
		return ""
	case strings.Trim(id, "0") == "" || strings.Trim(parent, "0") == "":
		return ""
	}
	return id
}

// lowerHex reports whether s is all lowercase hexadecimal digits.
func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// traceURL is the link of trace id under template tmpl; "" without one.
func traceURL(tmpl, id string) string {
	if tmpl == "" || id == "" {
		return ""
	}
	return strings.ReplaceAll(tmpl, TraceIDPlaceholder, id)
}
