package sluiceotel

import (
	"context"

	"github.com/sluicehq/sluice"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// keyRetryAfter is the span event's attribute of the retry delay.
const keyRetryAfter = attribute.Key("sluice.retry_after")

// spanEvent adds the sluice.refused event to ctx's span, if it records.
func spanEvent(ctx context.Context, rule string, d sluice.Decision) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	attrs := []attribute.KeyValue{keyRule.String(rule), keyOutcome.String(d.Outcome.String())}
	if d.Result.RetryAfter > 0 && !d.Result.Unsatisfiable {
		attrs = append(attrs, keyRetryAfter.Float64(d.Result.RetryAfter.Seconds()))
	}
	span.AddEvent("sluice.refused", trace.WithAttributes(attrs...))
}
