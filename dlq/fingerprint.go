package dlq

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode/utf8"
)

// Placeholders NormalizeMessage puts where a message had a value that
// varies from one failure to the next.
const (
	PlaceholderNumber = "<n>"
	PlaceholderUUID   = "<uuid>"
	PlaceholderHex    = "<hex>"
	PlaceholderID     = "<id>"
	PlaceholderQuoted = "<q>"
)

// MaxNormalizedLen bounds a normalised message, in bytes: the start of a
// long message decides its group.
const MaxNormalizedLen = 512

// maxQuoted is how far a quote may run before its closing quote and still
// be read as one quoted value.
const maxQuoted = 256

// NormalizeMessage returns an error message with what varies from one
// failure to the next replaced by placeholders, so that failures of one
// cause read alike: quoted values ('…', "…", `…`) become <q>, UUIDs
// <uuid>, hexadecimal values (0x…, or 8 or more hex digits mixing digits
// and letters) <hex>, numbers <n>, and other words holding a digit (ids
// such as ORD-2024-0042 or user_123) <id>. Runs of white space become one
// space; the result is at most MaxNormalizedLen bytes.
func NormalizeMessage(msg string) string {
	var b strings.Builder
	b.Grow(min(len(msg), MaxNormalizedLen))
	space := false
	for i := 0; i < len(msg) && b.Len() < MaxNormalizedLen; {
		c := msg[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			space = b.Len() > 0
			i++
			continue
		case space:
			b.WriteByte(' ')
			space = false
		}
		switch {
		case c == '\'' || c == '"' || c == '`':
			if end := strings.IndexByte(msg[i+1:min(len(msg), i+1+maxQuoted)], c); end >= 0 && (c != '\'' || quoteStarts(msg, i)) {
				b.WriteString(PlaceholderQuoted)
				i += end + 2
				continue
			}
			b.WriteByte(c)
			i++
		case isWordByte(c):
			j := i
			for j < len(msg) && isWordByte(msg[j]) {
				j++
			}
			// Punctuation ending a word ends the sentence, not the word.
			for j > i+1 && strings.IndexByte(".:-", msg[j-1]) >= 0 {
				j--
			}
			b.WriteString(normalizeWord(msg[i:j]))
			i = j
		default:
			_, n := utf8.DecodeRuneInString(msg[i:])
			b.WriteString(msg[i : i+n])
			i += n
		}
	}
	out := b.String()
	if len(out) > MaxNormalizedLen {
		out = strings.ToValidUTF8(out[:MaxNormalizedLen], "")
	}
	return out
}

// quoteStarts reports whether the ' at i opens a quote rather than being
// an apostrophe (don't, user's): it does at the start or after a
// character that is neither a letter, a digit nor '>' (which ends a
// placeholder, so that a normalised message normalises to itself).
func quoteStarts(s string, i int) bool {
	if i == 0 {
		return true
	}
	c := s[i-1]
	return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '>')
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == ':'
}

// normalizeWord returns the placeholder of word w, or w.
func normalizeWord(w string) string {
	digits, hexLetters, others := 0, 0, 0
	for i := 0; i < len(w); i++ {
		switch c := w[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F':
			hexLetters++
		default:
			others++
		}
	}
	switch {
	case digits == 0:
		return w
	case isUUID(w):
		return PlaceholderUUID
	case len(w) > 2 && (w[:2] == "0x" || w[:2] == "0X") && isHex(w[2:]):
		return PlaceholderHex
	case isNumber(w):
		return PlaceholderNumber
	case others == 0 && hexLetters > 0 && len(w) >= 8:
		return PlaceholderHex
	}
	return PlaceholderID
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return s != ""
}

// isUUID reports whether s is 8-4-4-4-12 hex digits.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, part := range strings.Split(s, "-") {
		if len(part) != [...]int{8, 4, 4, 4, 12}[min(i, 4)] || !isHex(part) || i > 4 {
			return false
		}
	}
	return true
}

// isNumber reports whether s is digits with optional leading minus and
// '.', ',' or ':' separators (1.5, 10:30:00, -3).
func isNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" || s[0] < '0' || s[0] > '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

// FingerprintLen is the length of a fingerprint: 32 hexadecimal digits.
const FingerprintLen = 32

// Fingerprint returns the failure fingerprint of e: its error class, its
// normalised error message (NormalizeMessage) and its worker, hashed, as
// 32 lower-case hexadecimal digits. Dead letters of one cause share it:
// they form a failure group. Stores compute it once, when an entry is
// stored (Record.PrepareInsert sets Record.Fingerprint).
func Fingerprint(e Entry) string {
	h := sha256.New()
	for _, s := range []string{e.ErrorClass, NormalizeMessage(e.ErrorMessage), e.Worker} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:FingerprintLen/2])
}

// ValidFingerprint reports whether s has a fingerprint's form.
func ValidFingerprint(s string) bool {
	if len(s) != FingerprintLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
