package main

import (
	"context"
	"math"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
)

// scrape appends one scrape of g, at t, to db as Prometheus would store it:
// each series with the target's job and instance labels, a histogram as
// its _bucket, _sum and _count series.
func scrape(g prometheus.Gatherer, db storage.Appendable, t time.Time) error {
	mfs, err := g.Gather()
	if err != nil {
		return err
	}
	app := db.Appender(context.Background())
	ts := t.UnixMilli()
	add := func(name string, m *dto.Metric, v float64, extra ...string) error {
		b := labels.NewScratchBuilder(len(m.GetLabel()) + 4)
		b.Add(model.MetricNameLabel, name)
		b.Add("job", "sluice")
		b.Add("instance", "render")
		for _, l := range m.GetLabel() {
			b.Add(l.GetName(), l.GetValue())
		}
		for i := 0; i+1 < len(extra); i += 2 {
			b.Add(extra[i], extra[i+1])
		}
		b.Sort()
		_, err := app.Append(0, b.Labels(), ts, v)
		return err
	}
	for _, mf := range mfs {
		name := mf.GetName()
		for _, m := range mf.GetMetric() {
			var err error
			switch {
			case m.Counter != nil:
				err = add(name, m, m.Counter.GetValue())
			case m.Gauge != nil:
				err = add(name, m, m.Gauge.GetValue())
			case m.Untyped != nil:
				err = add(name, m, m.Untyped.GetValue())
			case m.Histogram != nil:
				h := m.Histogram
				for _, bk := range h.GetBucket() {
					if err = add(name+"_bucket", m, float64(bk.GetCumulativeCount()), "le", strconv.FormatFloat(bk.GetUpperBound(), 'g', -1, 64)); err != nil {
						break
					}
				}
				if err == nil {
					err = add(name+"_bucket", m, float64(h.GetSampleCount()), "le", "+Inf")
				}
				if err == nil {
					err = add(name+"_sum", m, h.GetSampleSum())
				}
				if err == nil {
					err = add(name+"_count", m, float64(h.GetSampleCount()))
				}
			}
			if err != nil {
				app.Rollback()
				return err
			}
		}
	}
	return app.Commit()
}

// finite reports whether v can be drawn.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
