package httpguard

import (
	"net/http"
	"net/url"
	"strings"
)

// CrossOrigin reports whether r comes from a page of another site: its
// Origin header, else its Referer, names a host other than r.Host (or is
// "null", or does not parse). A request with neither header (not sent by
// a browser, or a browser that hides the referrer) is not cross-origin:
// what protects it is a bearer token, a CSRF token or a JSON content type.
func CrossOrigin(r *http.Request) bool {
	src := r.Header.Get("Origin")
	if src == "" {
		src = r.Header.Get("Referer")
	}
	if src == "" {
		return false
	}
	u, err := url.Parse(src)
	return err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host)
}
