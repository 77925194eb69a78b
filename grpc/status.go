package sluicegrpc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/headers"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Denial describes a call the rules refused.
type Denial struct {
	// FullMethod is the method called, "/package.Service/Method".
	FullMethod string
	// Violations are the exposed rules that refused the call, in the
	// set's order; empty when only hidden rules did.
	Violations []Violation
	// RetryAfter is the time until the call could pass: the longest wait
	// among the enforcing rules that refused it, exact (not rounded).
	// Zero when Unsatisfiable.
	RetryAfter time.Duration
	// Unsatisfiable reports that the call's cost exceeds a refusing rule's
	// capacity: it can never pass, however long the client waits.
	Unsatisfiable bool
}

// Violation is one exposed rule that refused a call.
type Violation struct {
	// Rule is the rule's name, as the rate-limit fields spell it.
	Rule string
	// Kind is what the rule counts by: its key's kind ("ip", "user",
	// "api_key", "endpoint", ...). Never the identity itself.
	Kind string
	// Limit is the rule's limit.
	Limit sluice.Limit
}

// DenialStatus is the default [DenyHandler]: codes.ResourceExhausted with
// the message "sluice: rate limit exceeded" (naming the rules), and the
// details
//
//   - google.rpc.RetryInfo, whose retry_delay is d.RetryAfter exactly
//     (absent when the call can never pass);
//   - google.rpc.QuotaFailure, one violation per rule in d.Violations:
//     quota_id is the rule's name, subject its key's kind ("ip", "user"),
//     quota_value the requests its limit admits per window (as
//     RateLimit-Policy's q) and description the limit in words; a single
//     violation naming no rule when only hidden rules refused.
//
// Read them back with [RetryDelay] and [Violations].
func DenialStatus(_ context.Context, d Denial) error {
	msg := "sluice: rate limit exceeded"
	if len(d.Violations) > 0 {
		names := make([]string, len(d.Violations))
		for i, v := range d.Violations {
			names[i] = v.Rule
		}
		msg += ": " + strings.Join(names, ", ")
	}
	if d.Unsatisfiable {
		msg += " (the call's cost exceeds the limit: it can never pass)"
	}
	qf := &errdetails.QuotaFailure{}
	for _, v := range d.Violations {
		q, _ := headers.Quota(v.Limit)
		qf.Violations = append(qf.Violations, &errdetails.QuotaFailure_Violation{
			Subject: v.Kind, QuotaId: v.Rule, QuotaValue: q,
			Description: fmt.Sprintf("rate limit %q: %v", v.Rule, v.Limit),
		})
	}
	if len(qf.Violations) == 0 {
		qf.Violations = []*errdetails.QuotaFailure_Violation{{Description: "a rate limit was exceeded"}}
	}
	st := status.New(codes.ResourceExhausted, msg)
	var err error
	if d.Unsatisfiable {
		st, err = st.WithDetails(qf)
	} else {
		st, err = st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(d.RetryAfter)}, qf)
	}
	if err != nil { // cannot happen: the details are valid messages
		return status.Error(codes.ResourceExhausted, msg)
	}
	return st.Err()
}

// ErrorStatus is the default [ErrorHandler]. It never shows err's text:
//
//   - the store failed and a rule fails closed ([decide.ErrStoreFailed]):
//     codes.Unavailable, with a google.rpc.RetryInfo of retry;
//   - a key that needs a route pattern found none ([keyfunc.ErrNotRouted],
//     a key function written for HTTP routers) or a negative call cost
//     ([decide.ErrInvalidCost]), the server's mistakes: codes.Internal;
//   - any other key failure ([decide.ErrKeyFailed]: a required identity
//     missing, metadata sent twice, a peer without an IP address):
//     codes.InvalidArgument.
func ErrorStatus(_ context.Context, err error, retry time.Duration) error {
	switch {
	case errors.Is(err, decide.ErrStoreFailed):
		st := status.New(codes.Unavailable, "sluice: rate limiting is unavailable; retry later")
		if withRetry, derr := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(retry)}); derr == nil {
			st = withRetry
		}
		return st.Err()
	case errors.Is(err, keyfunc.ErrNotRouted), errors.Is(err, decide.ErrInvalidCost):
		return status.Error(codes.Internal, "sluice: the server's rate limiting is misconfigured")
	default:
		return status.Error(codes.InvalidArgument, "sluice: the call lacks an identity a rate limit needs")
	}
}

// RetryDelay returns the retry delay of a status error's google.rpc.RetryInfo
// detail, and whether it has one. A refusal that can pass later has one
// ([DenialStatus]), as does a fail-closed Unavailable ([ErrorStatus]).
func RetryDelay(err error) (time.Duration, bool) {
	st, ok := status.FromError(err)
	if !ok || st == nil {
		return 0, false
	}
	return retryDelay(st)
}

// retryDelay is RetryDelay for a status.
func retryDelay(st *status.Status) (time.Duration, bool) {
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay() != nil {
			if err := ri.RetryDelay.CheckValid(); err != nil {
				return 0, false
			}
			return max(ri.RetryDelay.AsDuration(), 0), true
		}
	}
	return 0, false
}

// Violations returns the google.rpc.QuotaFailure violations of a status
// error, or nil.
func Violations(err error) []*errdetails.QuotaFailure_Violation {
	st, ok := status.FromError(err)
	if !ok || st == nil {
		return nil
	}
	for _, d := range st.Details() {
		if qf, ok := d.(*errdetails.QuotaFailure); ok {
			return qf.GetViolations()
		}
	}
	return nil
}

// endOf is how a call ended, for the rules that count by outcome: its
// status code, or Internal for a handler that panicked (it never
// returned), as gRPC answers the client.
func endOf(returned bool, err error) rules.Status {
	if !returned {
		return rules.GRPCStatus(rules.GRPCCode(codes.Internal))
	}
	return rules.GRPCStatus(rules.GRPCCode(status.Code(err)))
}
