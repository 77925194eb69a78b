// Package obs holds what the metrics package and the OpenTelemetry module
// share to turn a sluice.Observer's reports into series: the outcome
// labels, the default latency buckets, the kinds of store errors, and the
// bounded table of rule names.
package obs
