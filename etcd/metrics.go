package etcd

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// watchMetrics are a watcher's metrics (see WithRegisterer), its key's
// series of vectors a registry may share with the watchers of other keys.
type watchMetrics struct {
	origin    [len(originNames)]prometheus.Gauge
	readErrs  prometheus.Counter
	writeErrs prometheus.Counter
}

// newMetrics registers the vectors with reg, or takes those already
// there, and returns key's series, or nil when reg is nil.
func newMetrics(reg prometheus.Registerer, key string) (*watchMetrics, error) {
	if reg == nil {
		return nil, nil
	}
	origin, err := register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "sluice", Subsystem: "etcd", Name: "rules_origin",
		Help: "Where the rules in force came from, by key: 1 for the origin (etcd, snapshot, fallback), 0 for the others.",
	}, []string{"key", "origin"}))
	if err != nil {
		return nil, err
	}
	errs, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "sluice", Subsystem: "etcd", Name: "snapshot_errors_total",
		Help: "Snapshots of the last good rules not written (op=write), or not usable at start (op=read: missing, unreadable or refused), by key.",
	}, []string{"key", "op"}))
	if err != nil {
		return nil, err
	}
	m := &watchMetrics{readErrs: errs.WithLabelValues(key, "read"), writeErrs: errs.WithLabelValues(key, "write")}
	for o := range m.origin {
		m.origin[o] = origin.WithLabelValues(key, Origin(o).String())
	}
	return m, nil
}

// register registers c with reg, or returns the collector of the same
// description already registered.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, invalidConfig("WithRegisterer: " + err.Error())
}

// setOrigin reports o as the origin of the rules in force.
func (m *watchMetrics) setOrigin(o Origin) {
	if m == nil {
		return
	}
	for i, g := range m.origin {
		if Origin(i) == o {
			g.Set(1)
		} else {
			g.Set(0)
		}
	}
}

// snapshotFailed counts a snapshot not read or not written.
func (m *watchMetrics) snapshotFailed(write bool) {
	if m == nil {
		return
	}
	if write {
		m.writeErrs.Inc()
	} else {
		m.readErrs.Inc()
	}
}
