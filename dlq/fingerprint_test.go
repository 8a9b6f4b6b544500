package dlq_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/redrive/redrive/dlq"
)

func TestNormalizeMessage(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"connection refused", "connection refused"},
		{"bank rejected transfer 42", "bank rejected transfer <n>"},
		{"bank rejected transfer 42.", "bank rejected transfer <n>."},
		{"timeout after 1.5s", "timeout after <id>"},
		{"timeout after 1.5 s", "timeout after <n> s"},
		{"user 123 not found", "user <n> not found"},
		{"order ORD-2024-0042 failed", "order <id> failed"},
		{"account user_123: locked", "account <id>: locked"},
		{"entity 550e8400-e29b-41d4-a716-446655440000 missing", "entity <uuid> missing"},
		{"entity 550E8400-E29B-41D4-A716-446655440000 missing", "entity <uuid> missing"},
		{"bad pointer 0x7ffee4b2c9a8", "bad pointer <hex>"},
		{"commit deadbeef12 not found", "commit <hex> not found"},
		{"word deadbeef stays", "word deadbeef stays"},
		{`key "orders/17" missing`, "key <q> missing"},
		{"value 'abc' is not valid", "value <q> is not valid"},
		{"don't retry: user's limit", "don't retry: user's limit"},
		{"unclosed \"quote", "unclosed \"quote"},
		{"dial tcp 10.2.3.4:5672: connect: refused", "dial tcp <n>: connect: refused"},
		{"  many \t spaces\n\nhere  ", "many spaces here"},
		{"at 10:30:00 on -3", "at <n> on <n>"},
		{"größe 12 überschritten", "größe <n> überschritten"},
		{"HTTP 503 from https://api.example.com/v1/users/77", "HTTP <n> from https://api.example.com/<id>/users/<n>"},
	} {
		if got := dlq.NormalizeMessage(tc.in); got != tc.want {
			t.Errorf("NormalizeMessage(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	long := dlq.NormalizeMessage(strings.Repeat("é", 1000))
	if len(long) > dlq.MaxNormalizedLen || !utf8.ValidString(long) {
		t.Errorf("a long message normalises to %d bytes (valid UTF-8 %v)", len(long), utf8.ValidString(long))
	}
}

func TestFingerprint(t *testing.T) {
	a := dlq.Entry{ErrorClass: "payout.BankError", ErrorMessage: "bank rejected transfer 42", Worker: "billing"}
	b := a
	b.ErrorMessage = "bank rejected transfer 7"
	if fa, fb := dlq.Fingerprint(a), dlq.Fingerprint(b); fa != fb || !dlq.ValidFingerprint(fa) {
		t.Errorf("one cause, two fingerprints: %s %s", fa, fb)
	}
	for name, mod := range map[string]func(e *dlq.Entry){
		"class":   func(e *dlq.Entry) { e.ErrorClass = "payout.Timeout" },
		"message": func(e *dlq.Entry) { e.ErrorMessage = "bank closed" },
		"worker":  func(e *dlq.Entry) { e.Worker = "ledger" },
		// The separator keeps the fields apart.
		"shifted": func(e *dlq.Entry) { e.ErrorClass, e.ErrorMessage = "payout.BankError bank", "rejected transfer 42" },
	} {
		c := a
		mod(&c)
		if dlq.Fingerprint(c) == dlq.Fingerprint(a) {
			t.Errorf("another %s, same fingerprint", name)
		}
	}
	if dlq.ValidFingerprint("ABCDEF0123456789abcdef0123456789") || dlq.ValidFingerprint("abc") {
		t.Error("ValidFingerprint accepts upper case or short strings")
	}
}

func FuzzNormalizeMessage(f *testing.F) {
	for _, s := range []string{"bank rejected transfer 42", `key "x" 0x1f 550e8400-e29b-41d4-a716-446655440000`, "'", "a'b'c", "\xff\x00 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := dlq.NormalizeMessage(s)
		if len(n) > dlq.MaxNormalizedLen {
			t.Fatalf("%d bytes", len(n))
		}
		if utf8.ValidString(s) && !utf8.ValidString(n) {
			t.Fatalf("valid %q normalises to invalid %q", s, n)
		}
		// Normalising is idempotent: a group's message is its own group's.
		if utf8.ValidString(s) && len(s) < dlq.MaxNormalizedLen/2 {
			if again := dlq.NormalizeMessage(n); again != n {
				t.Fatalf("NormalizeMessage(%q) = %q, again %q", s, n, again)
			}
		}
		if fp := dlq.Fingerprint(dlq.Entry{ErrorMessage: s}); !dlq.ValidFingerprint(fp) {
			t.Fatalf("fingerprint %q", fp)
		}
	})
}
