package main

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// printable makes s safe to print on a terminal: every character that
// could control it is written as a Go escape instead: the C0 controls (tab
// and newline too: \t, \n, \x1b…), DEL, the C1 controls (\u009b is a
// CSI on some terminals), the Unicode bidirectional controls (\u202e…)
// and invalid UTF-8 bytes (\xff). A dead letter's error text, payload,
// headers and key are written by whoever sent the message: an escape
// sequence in them must not write the operator's clipboard or clear the
// screen. Every human output of the CLI that shows data from a message or
// from the server goes through printable (or printableLines); --json output
// stays exact.
func printable(s string) string {
	if isPrintable(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafeRune(r):
			q := strconv.QuoteRuneToASCII(r) // '\x1b', '\t', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// printableLines is printable for a block of lines (an indented payload,
// a stack trace): its newlines stay line breaks; every other control
// character is escaped.
func printableLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = printable(l)
	}
	return strings.Join(lines, "\n")
}

// isPrintable reports whether s needs no escaping.
func isPrintable(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || unsafeRune(r) {
			return false
		}
		i += size
	}
	return true
}

// unsafeRune reports whether r may control a terminal or reorder text.
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f: // C0, DEL, C1
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069: // bidi
		return true
	}
	return false
}
