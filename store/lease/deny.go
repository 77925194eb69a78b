package lease

// denial remembers when the next refill of a dry lease may be sent: a
// refusal by the backing store, or the wait of a dry lease for a cycle's
// tokens. Until then a refill that would ask for at least cost tokens (a
// fixed window's: cost or more) is refused in process, so a key far over
// its limit costs no store call per request. Immutable once published.
type denial struct {
	cost, until, remaining, fullAt int64
	upTo                           bool // a dry lease's wait for its cycle: every cost up to cost waits for it
}

// refuses reports whether d refuses at now a refill that would ask for at
// least least tokens: one asking for what the backing store refused (or
// the lease waits for) until then; for a fixed window, whose count only
// grows until the window ends, also one asking for more.
func (d *denial) refuses(now, least int64, window bool) bool {
	return d != nil && now < d.until && (least == d.cost || window && least > d.cost)
}

// refusesCost reports whether d refuses a hit of cost c at now, as
// [denial.refuses] would refuse the refill such a hit would claim.
func (d *denial) refusesCost(now, c int64, window bool) bool {
	return d.refuses(now, c, window) || d.upTo && now < d.until && c <= d.cost
}
