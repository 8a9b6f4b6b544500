// Package redact masks the secrets of URL-ish values (broker and database
// URLs, DSNs, user:password@host addresses) for printing: configuration
// output, error messages and logs. It masks whatever a value parses to: a
// careless value must not leak because a URL parser read it another way.
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// Mask replaces a secret.
const Mask = "***"

// secretParams are URL query parameters and DSN keys whose values are
// masked.
var secretParams = []string{"password", "passwd", "pass", "pwd", "secret", "token", "sslpassword", "access_key", "secret_key"}

// dsnPassword matches a secret in a key=value DSN (Postgres style).
var dsnPassword = regexp.MustCompile(`(?i)\b(` + strings.Join(secretParams, "|") + `)(\s*=\s*)('(?:[^'\\]|\\.)*'?|\S*)`)

// URL masks the secrets of a URL-ish value, whatever a URL parser
// makes of it:
//
//   - "scheme://user:password@host/…?password=…": the password and the
//     secret query parameters;
//   - a "scheme://…" value whose last "@" comes after a "/", "?" or "#"
//     (a password holding one of them moves the parser's idea of the
//     host: "amqp://guest:12/S3cr3t@host/" parses as host guest, port 12),
//     or that does not parse: all of it after "://";
//   - a key=value DSN: its secret keys;
//   - anything else with an "@" ("user:password@host:port"): everything
//     before the last "@".
func URL(s string) string {
	if s == "" {
		return s
	}
	scheme, rest, isURL := strings.Cut(s, "://")
	if !isURL {
		if strings.ContainsAny(s, "= \t") {
			s = dsnPassword.ReplaceAllString(s, "${1}${2}"+Mask)
		}
		if i := strings.LastIndex(s, "@"); i >= 0 {
			return Mask + s[i:] // user:password@host:port
		}
		return s
	}
	if strings.ContainsAny(scheme, "@:/?#") {
		return Mask
	}
	at := strings.LastIndex(rest, "@")
	if _, err := url.Parse(s); err != nil || at >= 0 && strings.ContainsAny(rest[:at], "/?#") {
		return scheme + "://" + Mask
	}
	var b strings.Builder
	b.WriteString(scheme + "://")
	if at >= 0 {
		if user, _, hasPassword := strings.Cut(rest[:at], ":"); hasPassword {
			b.WriteString(user + ":" + Mask)
		} else {
			b.WriteString(rest[:at])
		}
		b.WriteByte('@')
		rest = rest[at+1:]
	}
	b.WriteString(query(rest))
	return b.String()
}

// secretParam finds a secret query parameter: its name after "?", "&",
// ";", "#" or "/", and "=".
var secretParam = regexp.MustCompile(`(?i)[?&;#/](?:` + strings.Join(secretParams, "|") + `)=`)

// query masks the secret query parameters of rest (host, path, query and
// fragment of a URL): from the first one's value to the end, fragment
// included, since a "&", "?" or "#" left unescaped in a secret would
// split it.
func query(rest string) string {
	if loc := secretParam.FindStringIndex(rest); loc != nil {
		return rest[:loc[1]] + Mask
	}
	return rest
}
