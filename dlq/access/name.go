package access

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrBadName is the error of CheckName.
var ErrBadName = errors.New("not a name the audit log can record")

// Bounds of names.
const (
	// MaxNameLen bounds an identity's name, in bytes.
	MaxNameLen = 128
	// MaxActorLen bounds what Identity.Actor returns, in bytes: the
	// audit logs keep this much (heartbeat.MaxActorLen, dlq.MaxActorLen).
	MaxActorLen = 200
	// ReservedPrefix starts the names of redrive's own actors
	// ("redrive-reconciler", "redrive-archiver"); no operator may take one.
	ReservedPrefix = "redrive-"
)

// CheckName returns nil when name can be an identity's name in the audit
// log: 1 to MaxNameLen bytes of UTF-8 made of letters, marks, digits,
// punctuation, symbols and the plain space, not at either end; no control,
// format (bidirectional, zero-width) or other space character, which
// could make two names look alike or drive a terminal; no parenthesis
// (Identity.Actor writes "name (as claim)"); not starting with
// ReservedPrefix. A proxy's header and every configured name go through
// it; what it refuses is refused, never cleaned.
func CheckName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrBadName)
	case len(name) > MaxNameLen:
		return fmt.Errorf("%w: longer than %d bytes", ErrBadName, MaxNameLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: invalid UTF-8", ErrBadName)
	case strings.TrimSpace(name) != name:
		return fmt.Errorf("%w: white space at its start or end", ErrBadName)
	case strings.HasPrefix(strings.ToLower(name), ReservedPrefix):
		return fmt.Errorf("%w: %q names redrive's own actors", ErrBadName, ReservedPrefix)
	}
	for _, r := range name {
		switch {
		case r == '(' || r == ')':
			return fmt.Errorf("%w: holds a parenthesis", ErrBadName)
		case r == ' ':
		case !unicode.IsGraphic(r) || unicode.Is(unicode.Zs, r) || unicode.Is(unicode.Cf, r):
			return fmt.Errorf("%w: holds the character %U (control, format or a space other than U+0020)", ErrBadName, r)
		}
	}
	return nil
}

// cut shortens s to at most n bytes on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
