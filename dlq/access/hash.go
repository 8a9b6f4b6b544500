package access

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
)

// Tokens are kept as unsalted SHA-256 hashes, compared in constant time.
// A password hash (bcrypt, scrypt, argon2) makes guessing a low-entropy
// secret slow; a token is not one: NewToken makes 256 random bits, and
// the hash helper (`redrive admin hash-token`) refuses anything shorter
// than MinHashedTokenLen, so no guessing rate finds one from its hash.
// SHA-256 costs a microsecond per request where bcrypt would cost tens
// of milliseconds of CPU on every API call (a way to exhaust the server),
// and it needs no dependency. GitHub keeps its tokens the same way.

// hashPrefix names the algorithm of a Credential.Hash.
const hashPrefix = "sha256:"

// MinHashedTokenLen is the shortest token HashTokenChecked accepts: 32
// characters, at least 160 bits however they were chosen from letters
// and digits.
const MinHashedTokenLen = 32

// HashToken returns the hash a Credential keeps of tok: "sha256:" and
// the 64 lower-case hex digits of its SHA-256.
func HashToken(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hashPrefix + hex.EncodeToString(sum[:])
}

// HashTokenChecked is HashToken for a token about to be configured by its
// hash: it refuses a token that TokenProblem refuses or that is shorter
// than MinHashedTokenLen (its hash could be reversed by guessing).
func HashTokenChecked(tok string) (string, error) {
	if msg := TokenProblem(tok); msg != "" {
		return "", fmt.Errorf("token: %s", msg)
	}
	if len(tok) < MinHashedTokenLen {
		return "", fmt.Errorf("token: shorter than %d characters: its hash could be reversed by guessing (make one with NewToken, `redrive admin hash-token --generate`)", MinHashedTokenLen)
	}
	return HashToken(tok), nil
}

// ParseHash returns the SHA-256 a Credential.Hash names.
func ParseHash(h string) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	hexed, ok := strings.CutPrefix(h, hashPrefix)
	if !ok {
		return sum, fmt.Errorf("%q does not start with %q (make one with `redrive admin hash-token`)", cut(h, 16), hashPrefix)
	}
	if len(hexed) != 2*sha256.Size || strings.ToLower(hexed) != hexed {
		return sum, fmt.Errorf("not %q and 64 lower-case hex digits", hashPrefix)
	}
	if _, err := hex.Decode(sum[:], []byte(hexed)); err != nil {
		return sum, fmt.Errorf("not %q and 64 lower-case hex digits", hashPrefix)
	}
	return sum, nil
}

// NewToken returns a new random token: 32 bytes from crypto/rand,
// URL-safe base64 (43 characters).
func NewToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// TokenProblem says what makes tok unusable as a token (blank, white space
// at either end, shorter than MinTokenLen), or "" when it is fine.
// Presented tokens are trimmed, so a token with white space at an end
// could never be presented.
func TokenProblem(tok string) string {
	switch {
	case strings.TrimSpace(tok) == "":
		return "blank (only white space): nobody could log in"
	case strings.TrimSpace(tok) != tok:
		return "has white space at its start or end: presented tokens are trimmed, so nobody could log in (remove it; check the variable it comes from)"
	case len(tok) < MinTokenLen:
		return fmt.Sprintf("shorter than %d characters: too easy to guess", MinTokenLen)
	}
	return ""
}
