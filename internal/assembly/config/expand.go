package config

import (
	"fmt"
	"strings"
)

// lookupFunc looks up an environment variable, like os.LookupEnv.
type lookupFunc func(name string) (string, bool)

// expandEnv replaces ${NAME} and ${NAME:-default} references in s with the
// value of the environment variable NAME. ${NAME} of an unset variable is
// empty; ${NAME:-default} yields default when NAME is unset or empty, and
// default may itself hold references. "$${" is a literal "${". A "$" not
// followed by "{" is kept as is. It reports whether s changed.
func expandEnv(s string, lookup lookupFunc) (string, bool, error) {
	if !strings.Contains(s, "${") {
		return s, false, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			b.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end, err := closingBrace(s, i+2)
			if err != nil {
				return "", false, err
			}
			v, err := expandRef(s[i+2:end], lookup)
			if err != nil {
				return "", false, err
			}
			b.WriteString(v)
			i = end + 1
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String(), b.String() != s, nil
}

// closingBrace returns the index of the "}" closing the reference whose body
// starts at start, skipping nested "${...}" references.
func closingBrace(s string, start int) (int, error) {
	depth := 0
	for i := start; i < len(s); i++ {
		switch {
		case s[i] == '$' && i+1 < len(s) && s[i+1] == '{':
			depth++
			i++
		case s[i] == '}':
			if depth == 0 {
				return i, nil
			}
			depth--
		}
	}
	return 0, fmt.Errorf("%q is not closed with }", abbreviate(s[start-2:]))
}

// expandRef expands the body of one reference: NAME or NAME:-default.
func expandRef(body string, lookup lookupFunc) (string, error) {
	name, def, hasDef := strings.Cut(body, ":-")
	if !validEnvName(name) {
		return "", fmt.Errorf("%q: %q is not a variable name (letters, digits and _, not starting with a digit)",
			abbreviate("${"+body+"}"), name)
	}
	v, ok := lookup(name)
	if hasDef && (!ok || v == "") {
		d, _, err := expandEnv(def, lookup)
		return d, err
	}
	return v, nil
}

// validEnvName reports whether name is [A-Za-z_][A-Za-z0-9_]*.
func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i, c := range name {
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// abbreviate shortens s for an error message.
func abbreviate(s string) string {
	const max = 40
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}
