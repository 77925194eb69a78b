package sluiceotel_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	sluiceotel "github.com/sluicehq/sluice/otel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// newRecorder returns a recorder on a meter provider with a manual
// reader, and the reader.
func newRecorder(tb testing.TB, opts ...sluiceotel.Option) (*sluiceotel.Recorder, *sdkmetric.ManualReader) {
	tb.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	tb.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	rec, err := sluiceotel.New(mp, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return rec, reader
}

// instrument is what a reader collected of one instrument: its unit, its
// kind, and its points as "attributes: value", sorted.
type instrument struct {
	unit   string
	kind   string
	points []string
}

// collect reads every instrument of the recorder's scope, by name.
func collect(tb testing.TB, reader *sdkmetric.ManualReader) map[string]instrument {
	tb.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		tb.Fatal(err)
	}
	got := map[string]instrument{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != sluiceotel.ScopeName {
			tb.Errorf("scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			in := instrument{unit: m.Unit}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				in.kind = "updowncounter"
				if d.IsMonotonic {
					in.kind = "counter"
				}
				for _, p := range d.DataPoints {
					in.points = append(in.points, fmt.Sprintf("%s: %d", attrs(p.Attributes), p.Value))
				}
			case metricdata.Gauge[int64]:
				in.kind = "gauge"
				for _, p := range d.DataPoints {
					in.points = append(in.points, fmt.Sprintf("%s: %d", attrs(p.Attributes), p.Value))
				}
			case metricdata.Histogram[float64]:
				in.kind = "histogram"
				for _, p := range d.DataPoints {
					in.points = append(in.points, fmt.Sprintf("%s: count=%d sum=%g", attrs(p.Attributes), p.Count, p.Sum))
				}
			default:
				tb.Fatalf("%s: unexpected data %T", m.Name, m.Data)
			}
			slices.Sort(in.points)
			got[m.Name] = in
		}
	}
	return got
}

// attrs formats a set as "k=v,k=v", in key order.
func attrs(s attribute.Set) string {
	var b []string
	for _, kv := range s.ToSlice() {
		b = append(b, string(kv.Key)+"="+kv.Value.String())
	}
	return strings.Join(b, ",")
}
