package main

import "github.com/redrive/redrive/internal/termtext"

// printable makes s safe to print on a terminal (termtext.Printable):
// every human output of the CLI that shows data from a message, from
// Redis or from the server goes through printable (or printableLines);
// --output json stays exact.
func printable(s string) string { return termtext.Printable(s) }

// printableLines is printable for a block of lines: its newlines stay
// line breaks (termtext.Lines).
func printableLines(s string) string { return termtext.Lines(s) }

// isPrintable reports whether s needs no escaping.
func isPrintable(s string) bool { return termtext.IsPrintable(s) }

// unsafeRune reports whether r may control a terminal or reorder text.
func unsafeRune(r rune) bool { return termtext.UnsafeRune(r) }
