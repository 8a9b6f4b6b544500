// Package termtext makes text from others safe to print on a terminal.
//
// A dead letter's error text, payload, headers and key are written by
// whoever sent the message; a heartbeat's type, instance, status and pause
// reason, and the audit stream's actor and reason, by whoever can write to
// Redis. An escape sequence in them must not write the operator's
// clipboard (OSC 52), clear the screen or reorder the text (U+202E): every
// human output of redrive that shows such data goes through [Printable]
// (or [Lines]); JSON output stays exact.
package termtext

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Printable returns s with every character that could control a terminal
// written as a Go escape instead: the C0 controls (tab and newline too:
// \t, \n, \x1b…), DEL, the C1 controls (\u009b is a CSI on some
// terminals), the Unicode bidirectional controls (\u202e…) and invalid
// UTF-8 bytes (\xff). A string that needs none is returned as it is.
func Printable(s string) string {
	if IsPrintable(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case UnsafeRune(r):
			q := strconv.QuoteRuneToASCII(r) // '\x1b', '\t', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Lines is Printable for a block of lines (an indented payload, a stack
// trace): its newlines stay line breaks; every other control character is
// escaped.
func Lines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = Printable(l)
	}
	return strings.Join(lines, "\n")
}

// IsPrintable reports whether s needs no escaping.
func IsPrintable(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || UnsafeRune(r) {
			return false
		}
		i += size
	}
	return true
}

// UnsafeRune reports whether r may control a terminal or reorder text.
func UnsafeRune(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f: // C0, DEL, C1
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069: // bidi
		return true
	}
	return false
}
