package broker

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/retrypolicy"
)

func TestSubscriptionWithDefaults(t *testing.T) {
	s := Subscription{Topic: "t", Group: "g", Concurrency: 4}.WithDefaults()
	if s.RetryMode != Blocking || s.Concurrency != 4 || s.Prefetch != 8 ||
		s.ShutdownTimeout != DefaultShutdownTimeout || s.DLQ.Severity != "warning" {
		t.Errorf("WithDefaults() = %+v", s)
	}
	s = Subscription{}.WithDefaults()
	if s.Concurrency != DefaultConcurrency || s.Prefetch != 2*DefaultConcurrency {
		t.Errorf("WithDefaults() of zero = %+v", s)
	}
	kept := Subscription{RetryMode: NonBlocking, Prefetch: 3, ShutdownTimeout: time.Second, DLQ: DLQOptions{Severity: "critical"}}.WithDefaults()
	if kept.RetryMode != NonBlocking || kept.Prefetch != 3 || kept.ShutdownTimeout != time.Second || kept.DLQ.Severity != "critical" {
		t.Errorf("WithDefaults() overwrote set fields: %+v", kept)
	}
}

func TestSubscriptionValidate(t *testing.T) {
	ok := Subscription{Topic: "t", Group: "g"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("Validate() = %v", err)
	}
	tests := []struct {
		mutate func(*Subscription)
		want   string
	}{
		{func(s *Subscription) { s.Topic = "" }, "topic"},
		{func(s *Subscription) { s.Group = "" }, "group"},
		{func(s *Subscription) { s.RetryMode = "later" }, "retry mode"},
		{func(s *Subscription) { s.MaxAge = -1 }, "max age"},
		{func(s *Subscription) { s.Concurrency = -1 }, "concurrency"},
		{func(s *Subscription) { s.DLQ.Severity = "high" }, "severity"},
		{func(s *Subscription) { s.Policy = retrypolicy.Policy{MaxRetries: -1} }, "max_retries"},
	}
	for _, tt := range tests {
		s := ok
		tt.mutate(&s)
		err := s.Validate()
		if !errors.Is(err, ErrInvalidSubscription) {
			t.Errorf("want %s error, got %v", tt.want, err)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("error %q does not name %q", err, tt.want)
		}
	}
	err := Subscription{Topic: "t", Group: "g", Policy: retrypolicy.Policy{MaxRetries: -1}}.Validate()
	if !errors.Is(err, retrypolicy.ErrInvalid) {
		t.Errorf("policy error %v does not wrap retrypolicy.ErrInvalid", err)
	}
}
