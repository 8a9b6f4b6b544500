package worker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
)

// probeTimeout bounds the broker checks of one /readyz request.
const probeTimeout = 2 * time.Second

// health is the state the probes of one Run report.
type health struct {
	probe    driver.Prober // nil: the backend tells nothing
	subs     []broker.Subscription
	draining atomic.Bool

	mu   sync.Mutex
	dead map[string]error // workers whose consumer loop ended with an error
}

func (h *health) loopEnded(worker string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dead == nil {
		h.dead = map[string]error{}
	}
	h.dead[worker] = err
}

// live returns nil while every consumer loop runs.
func (h *health) live() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var errs []error
	for _, s := range h.subs {
		if err, ok := h.dead[s.Group]; ok {
			errs = append(errs, fmt.Errorf("worker %s: consumer loop ended: %w", s.Group, err))
		}
	}
	return errors.Join(errs...)
}

// ready returns nil while every worker consumes and no shutdown began.
func (h *health) ready(ctx context.Context) error {
	if h.draining.Load() {
		return errors.New("shutting down: draining in-flight messages")
	}
	if err := h.live(); err != nil {
		return err
	}
	if h.probe == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var errs []error
	for _, s := range h.subs {
		if err := h.probe.ConsumerReady(ctx, s.Topic, s.Group); err != nil {
			errs = append(errs, fmt.Errorf("worker %s: %w", s.Group, err))
		}
	}
	return errors.Join(errs...)
}

func (h *health) handler() http.Handler {
	mux := http.NewServeMux()
	answer := func(w http.ResponseWriter, err error) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			for _, line := range strings.Split(err.Error(), "\n") {
				fmt.Fprintln(w, line)
			}
			return
		}
		fmt.Fprintln(w, "ok")
	}
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) { answer(w, h.live()) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) { answer(w, h.ready(r.Context())) })
	return mux
}

// serveHealth listens on addr, stores the bound address in bound and
// serves h until stop is called, which shuts the server down.
func serveHealth(addr string, h *health, bound *atomic.Pointer[string]) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("worker: health probes: listen on %s: %w", addr, err)
	}
	a := ln.Addr().String()
	bound.Store(&a)
	srv := &http.Server{Handler: h.handler(), ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}
