package exporter

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"

	"github.com/redrive/redrive/lag"
)

// metricsHandler serves /metrics as promhttp does over
// prometheus.Gatherers{reg, lag}, the same page with the same headers, but
// without
// re-encoding the lag sampler's series on each scrape: the registry's
// families (Go, process, heartbeats, DLQ… a few hundred series) are
// gathered and encoded per scrape, and merged by name with the lag
// families, which lag.Sampler.Encoded encodes, and compresses, once per
// sample and format. A gzip response splices the lag families' compressed
// blocks between those of the registry's, compressed per scrape
// (splicedGzip): a scrape neither encodes nor compresses the lag series.
//
// Whatever this fast path does not reproduce exactly is served by the
// promhttp handler over the same Gatherers (fallback): an error gathering
// the registry, a metric family name both in the registry and in the lag
// sampler, an encoding error of the lag families.
type metricsHandler struct {
	reg      prometheus.Gatherer
	lag      *lag.Sampler
	fallback http.Handler
	errLog   promhttp.Logger
	errCnt   *prometheus.CounterVec
	formats  []expfmt.Format
}

// newMetricsHandler returns the /metrics handler of reg and s (nil = only
// reg), with promhttp's options opts; opts.Registry receives promhttp's
// metrics, which the fast path counts too. The fast path knows the options
// ErrorLog, ErrorHandling ContinueOnError, Registry and EnableOpenMetrics;
// with any other, every scrape is promhttp's.
func newMetricsHandler(reg prometheus.Gatherer, s *lag.Sampler, opts promhttp.HandlerOpts) http.Handler {
	if s == nil {
		return promhttp.HandlerFor(reg, opts)
	}
	if opts.ErrorHandling != promhttp.ContinueOnError || opts.DisableCompression || len(opts.OfferedCompressions) > 0 ||
		len(opts.AcceptedFormats) > 0 || opts.MaxRequestsInFlight > 0 || opts.Timeout > 0 || !opts.ProcessStartTime.IsZero() ||
		opts.EnableOpenMetricsTextCreatedSamples || opts.CoalesceGather {
		return promhttp.HandlerFor(prometheus.Gatherers{reg, s}, opts)
	}
	h := &metricsHandler{
		reg:      reg,
		lag:      s,
		fallback: promhttp.HandlerFor(prometheus.Gatherers{reg, s}, opts),
		errLog:   opts.ErrorLog,
		formats:  expfmt.DefaultAcceptedFormats(),
	}
	if opts.EnableOpenMetrics {
		h.formats = expfmt.DefaultOpenMetricsAcceptedFormats()
	}
	// promhttp registered its error counter on opts.Registry: share it.
	cnt := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "promhttp_metric_handler_errors_total",
		Help: "Total number of internal errors encountered by the promhttp metric handler.",
	}, []string{"cause"})
	if opts.Registry != nil {
		var are prometheus.AlreadyRegisteredError
		if err := opts.Registry.Register(cnt); errors.As(err, &are) {
			if c, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
				cnt = c
			}
		}
	}
	h.errCnt = cnt
	return h
}

func (h *metricsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	mfs, err := h.reg.Gather()
	if err != nil {
		h.fallback.ServeHTTP(w, r)
		return
	}
	format := expfmt.NegotiateAccept(r.Header, h.formats...)
	lfs, _, err := h.lag.Encoded(format)
	if err != nil {
		h.fallback.ServeHTTP(w, r)
		return
	}
	for i, j := 0, 0; i < len(mfs) && j < len(lfs); {
		switch n, l := mfs[i].GetName(), lfs[j].Name; {
		case n == l:
			h.fallback.ServeHTTP(w, r)
			return
		case n < l:
			i++
		default:
			j++
		}
	}
	var filter map[string]bool
	if r.URL != nil {
		if names := r.URL.Query()["name[]"]; len(names) > 0 {
			filter = make(map[string]bool, len(names))
			for _, n := range names {
				filter[n] = true
			}
		}
	}

	w.Header().Add("Vary", "Accept")
	w.Header().Add("Vary", "Accept-Encoding")
	w.Header().Set("Content-Type", string(format))
	var out io.Writer = w
	var gz *splicedGzip
	if acceptsGzip(r.Header) {
		w.Header().Set("Content-Encoding", "gzip")
		gz = newSplicedGzip(w)
		defer func() { _ = gz.Close() }()
		out = gz
	}
	enc := expfmt.NewEncoder(out, format)
	fail := func(err error) bool {
		if err == nil {
			return false
		}
		if h.errLog != nil {
			h.errLog.Println("error encoding and sending metric family:", err)
		}
		h.errCnt.WithLabelValues("encoding").Inc()
		return errors.Is(err, errWrite)
	}
	i, j := 0, 0
	for i < len(mfs) || j < len(lfs) {
		if j == len(lfs) || (i < len(mfs) && mfs[i].GetName() < lfs[j].Name) {
			mf := mfs[i]
			i++
			if filter == nil || filter[mf.GetName()] {
				if fail(enc.Encode(mf)) {
					return
				}
			}
			continue
		}
		lf := lfs[j]
		j++
		if filter == nil || filter[lf.Name] {
			var err error
			if gz != nil {
				err = gz.splice(lf)
			} else {
				_, err = w.Write(lf.Data)
			}
			if err != nil {
				fail(errors.Join(errWrite, err))
				return
			}
		}
	}
	if c, ok := enc.(expfmt.Closer); ok {
		fail(c.Close())
	}
}

// errWrite marks a failed write of cached data: the client is gone, the
// rest of the page is not sent.
var errWrite = errors.New("write")

// acceptsGzip reports whether promhttp would compress the response to a
// request with header h: gzip is offered after identity and wins when the
// best quality the request gives gzip (or *) is above the best it gives
// identity (or *). As promhttp's parser, it reads "value[;q=N]" specs and
// drops the rest of a header line at a malformed one.
func acceptsGzip(h http.Header) bool {
	gz, id := -1.0, -1.0
	for _, line := range h.Values("Accept-Encoding") {
		for spec := range strings.SplitSeq(line, ",") {
			value, param, hasParam := strings.Cut(spec, ";")
			value = strings.TrimSpace(value)
			if value == "" || strings.ContainsAny(value, " \t") {
				break
			}
			q := 1.0
			if hasParam {
				v, ok := strings.CutPrefix(strings.TrimSpace(param), "q=")
				f, err := strconv.ParseFloat(v, 64)
				if !ok || err != nil || f < 0 || f > 1 {
					break
				}
				q = f
			}
			if value == "gzip" || value == "*" {
				gz = max(gz, q)
			}
			if value == "identity" || value == "*" {
				id = max(id, q)
			}
		}
	}
	return gz > id && gz > 0
}
