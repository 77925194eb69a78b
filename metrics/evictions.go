package metrics

import "github.com/prometheus/client_golang/prometheus"

// newEvictions returns the counter of sluice_memstore_evictions_total.
func newEvictions(ns string, constLabels prometheus.Labels) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: ns, Name: "memstore_evictions_total", ConstLabels: constLabels,
		Help: "Buckets the in-process store evicted, full, to make room for new ones: each was forgiven what it had used.",
	})
}

// BucketsEvicted counts n evictions of the in-process store in
// sluice_memstore_evictions_total. It implements memstore.Events: give the
// collector to memstore.Config's Events field.
func (c *Collector) BucketsEvicted(n int) {
	if n > 0 {
		c.evictions.Add(float64(n))
	}
}
