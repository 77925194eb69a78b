package envoy

import (
	"errors"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// UnknownDomain is the domain label under which the service's metrics
// count the requests of domains the mapping does not define, so that
// clients cannot make labels without bound.
const UnknownDomain = "__unknown__"

// serviceMetrics are the service's own metrics (see WithRegisterer).
type serviceMetrics struct {
	requests    *prometheus.CounterVec
	descriptors *prometheus.CounterVec
	duration    prometheus.Histogram
}

func newServiceMetrics(reg prometheus.Registerer) (*serviceMetrics, error) {
	m := &serviceMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "sluice", Subsystem: "envoy", Name: "requests_total",
			Help: "ShouldRateLimit calls, by domain and answer (ok, over_limit, invalid_argument, unavailable, error).",
		}, []string{"domain", "code"}),
		descriptors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "sluice", Subsystem: "envoy", Name: "descriptors_total",
			Help: "Descriptors of well-formed requests, by domain and how the mapping answered them (limited, unlimited, replaced, unmatched).",
		}, []string{"domain", "match"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "sluice", Subsystem: "envoy", Name: "request_duration_seconds",
			Help:    "Time ShouldRateLimit took, store call included.",
			Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25},
		}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.descriptors, m.duration} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return nil, invalidConfig("WithRegisterer: the service's metrics are already registered: " + err.Error())
			}
			return nil, invalidConfig("WithRegisterer: " + err.Error())
		}
	}
	return m, nil
}

func domainLabel(domain string, known bool) string {
	if !known {
		return UnknownDomain
	}
	return domain
}

func (m *serviceMetrics) request(domain string, known bool, resp *rlsv3.RateLimitResponse, err error, d time.Duration) {
	code := "ok"
	switch {
	case err != nil && status.Code(err) == codes.InvalidArgument:
		code = "invalid_argument"
	case err != nil && status.Code(err) == codes.Unavailable:
		code = "unavailable"
	case err != nil:
		code = "error"
	case resp.OverallCode == rlsv3.RateLimitResponse_OVER_LIMIT:
		code = "over_limit"
	}
	m.requests.WithLabelValues(domainLabel(domain, known), code).Inc()
	m.duration.Observe(d.Seconds())
}

func (m *serviceMetrics) counted(domain string, known bool, answers []answer) {
	label := domainLabel(domain, known)
	for _, a := range answers {
		m.descriptors.WithLabelValues(label, answerNames[a]).Inc()
	}
}
