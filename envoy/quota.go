package envoy

import (
	"context"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
)

// This file holds what two of envoyproxy/ratelimit's fields mean in a
// decision: requests_per_unit: 0, which refuses every request without
// counting it, and quota_mode, whose limits refuse a request only when
// all of the request's quota limits are over.

// refusedEarly reports whether a request is refused before anything is
// counted: a descriptor no limit applies to while its domain's unmatched
// is over_limit, a banned limit (requests_per_unit: 0) in neither shadow
// nor quota mode, or quota limits that are all banned.
func refusedEarly(dom *domain, d *decision) bool {
	quotas, bannedQuotas := 0, 0
	for i, a := range d.answers {
		switch {
		case a == answerUnmatched && dom.unmatched == UnmatchedOverLimit:
			return true
		case !isQuota(d, i):
			if a == answerBanned && !d.limits[i].shadow {
				return true
			}
		case a == answerBanned && !d.limits[i].shadow:
			quotas++
			bannedQuotas++
		default:
			quotas++
		}
	}
	return quotas > 0 && bannedQuotas == quotas
}

// isQuota reports whether descriptor i meets a quota limit of the mapping,
// counted or banned (a limit override is never one).
func isQuota(d *decision, i int) bool {
	a := d.answers[i]
	return (a == answerLimited || a == answerBanned) && d.over[i] == nil && d.limits[i].quota
}

// softenQuotas makes the hits of quota limits soft when a request meets
// two or more: a soft hit never refuses the request by itself (the store
// decides it as a shadow hit), and settleQuotas refuses the request when
// all of them are over. One quota limit alone refuses as any limit does,
// which is the same.
func softenQuotas(d *decision) {
	quotas := 0
	for i := range d.answers {
		if isQuota(d, i) {
			quotas++
		}
	}
	if quotas < 2 {
		return
	}
	for i := range d.answers {
		if j := d.hitOf[i]; j >= 0 && isQuota(d, i) {
			d.m.Hits[j].Shadow = true
		}
	}
}

// soft reports whether hit j is a soft quota hit (see softenQuotas).
func soft(d *decision, j int) bool { return d.m.Hits[j].Shadow && !d.m.Rules[j].Shadow }

// settleQuotas returns whether a request the decider decided passes, with
// its quota limits as envoyproxy/ratelimit applies them: admitted, and not
// refused by all of its quota limits being over (a shadow one never is).
// A request refused keeps nothing: what its hits took is given back (when
// the store can, [sluice.Refunder]; shadow limits keep what they took, as
// always). After a store failure, the decider has given back what it
// must, and soft quota hits keep what they took, as shadow ones do.
func (s *Service) settleQuotas(ctx context.Context, d *decision, o *decide.Outcome) bool {
	admitted := o.Verdict == decide.Admitted
	quotas, over, softs := 0, 0, 0
	for i := range d.answers {
		if !isQuota(d, i) {
			continue
		}
		quotas++
		j := d.hitOf[i]
		if j < 0 { // banned
			if !d.limits[i].shadow {
				over++
			}
			continue
		}
		if soft(d, j) {
			softs++
		}
		if !d.m.Rules[j].Shadow && o.Decided(j) && !o.Results[j].Allowed {
			over++
		}
	}
	if softs == 0 {
		return admitted // one quota limit alone refuses as any other does
	}
	ok := admitted && over < quotas
	if !ok && o.Err == nil {
		s.giveBack(ctx, d, o, admitted)
	}
	return ok
}

// giveBack returns what a refused request's hits took: its soft quota
// hits', and, when the store had admitted it, its enforcing hits'. A
// refund that fails loses at most the request's cost until the buckets
// refill; it is never retried (a retry can give back twice).
func (s *Service) giveBack(ctx context.Context, d *decision, o *decide.Outcome, admitted bool) {
	refunder, ok := s.store.(sluice.Refunder)
	if !ok {
		return
	}
	var refunds []sluice.Refund
	for j := range d.m.Hits {
		h, rc := &d.m.Hits[j], o.Results[j].Receipt
		if rc.Taken > 0 && !h.Peek && !h.Force && (soft(d, j) || admitted && !h.Shadow) {
			refunds = append(refunds, sluice.Refund{Hit: *h, Receipt: rc})
		}
	}
	if len(refunds) == 0 {
		return
	}
	call, cancel := context.WithTimeout(context.WithoutCancel(ctx), decide.DefaultBudget)
	defer cancel()
	_ = refunder.Refund(call, refunds)
}
