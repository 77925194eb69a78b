package headers

import (
	"net/http"
	"strconv"
	"time"

	"github.com/sluicehq/sluice"
)

// Policy is one rule's decision as the headers describe it.
type Policy struct {
	// Name identifies the policy in RateLimit-Policy and RateLimit. It is
	// written as [SanitizeName] returns it.
	Name string
	// Result is the store's answer for the rule's hit. Its Limit gives the
	// quota and window (see [Quota]), its other fields r and t.
	Result sluice.Result
}

// Field names in Go's canonical form, as [http.Header.Set] stores them.
const (
	fieldPolicy     = "Ratelimit-Policy"
	fieldRateLimit  = "Ratelimit"
	fieldLimit      = "Ratelimit-Limit"
	fieldRemaining  = "Ratelimit-Remaining"
	fieldReset      = "Ratelimit-Reset"
	fieldXLimit     = "X-Ratelimit-Limit"
	fieldXRemaining = "X-Ratelimit-Remaining"
	fieldXReset     = "X-Ratelimit-Reset"
)

// burstParam is the vendor parameter that carries a capacity unlike the
// rate, prefixed as the draft asks of extension parameters.
const burstParam = ";sluice-burst="

// Field is one header field to send: its name, in canonical form
// ("Ratelimit-Policy", as [http.Header.Set] stores it), and its value.
type Field struct {
	Name  string
	Value string
}

// Write sets in h the rate-limit header fields [AppendFields] returns,
// each replacing any earlier value. It never sets Retry-After: see
// [SetRetryAfter].
func Write(h http.Header, mode Mode, policies []Policy, binding int, now time.Time) {
	var arr [maxFields]Field
	SetFields(h, AppendFields(arr[:0], mode, policies, binding, now))
}

// SetFields sets fields in h, each replacing any earlier value, with one
// allocation whatever their number. Their names must be in canonical form,
// as the fields of this package are.
func SetFields(h http.Header, fields []Field) {
	if len(fields) == 0 {
		return
	}
	// Each value gets a slice of capacity 1, so that a later Add to one
	// field cannot overwrite another.
	vals := make([]string, len(fields))
	for i, f := range fields {
		vals[i] = f.Value
		h[f.Name] = vals[i : i+1 : i+1]
	}
}

// AppendFields appends to dst the rate-limit header fields that mode
// selects, describing policies, and returns the extended slice. The
// caller has chosen to expose every policy: it must already have left out
// shadow rules and rules marked unexposed, since AppendFields makes no
// such decision. policies[binding] is the binding policy (the most
// restrictive one), which the caller chooses too. The values share one
// allocated string, whatever the mode and the number of policies.
//
// In IETF mode, RateLimit-Policy lists every policy, in the order given,
// and RateLimit describes the binding one. Draft06 and XRateLimit modes
// describe the binding policy only, except draft-06's RateLimit-Policy,
// which lists every policy; when IETF is also selected, RateLimit-Policy
// takes the IETF form. See the package documentation for the values.
//
// now is the current time: XRateLimit mode's reset is a Unix time, and a
// calendar limit's window is the length of its period at now (see
// [QuotaAt]). AppendFields appends nothing if mode selects no fields,
// policies is empty or binding is out of range. It never appends
// Retry-After: see [RetryAfter].
func AppendFields(dst []Field, mode Mode, policies []Policy, binding int, now time.Time) []Field {
	if mode&allModes == 0 || binding < 0 || binding >= len(policies) {
		return dst
	}
	bind := policies[binding].Result
	q, _ := QuotaAt(bind.Limit, now)
	r := clamp(bind.Remaining)
	resetD, t := resetAfter(bind)
	t = clamp(t)

	var arr [384]byte
	b := arr[:0]
	var f fields
	if mode&IETF != 0 {
		for i := range policies {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendString(b, policies[i].Name)
			b = appendPolicyParams(b, policies[i].Result.Limit, ";q=", now)
		}
		f.end(fieldPolicy, len(b))
		b = appendString(b, policies[binding].Name)
		b = append(b, ";r="...)
		b = strconv.AppendInt(b, r, 10)
		if t > 0 {
			b = append(b, ";t="...)
			b = strconv.AppendInt(b, t, 10)
		}
		f.end(fieldRateLimit, len(b))
	}
	if mode&Draft06 != 0 {
		b = strconv.AppendInt(b, q, 10)
		f.end(fieldLimit, len(b))
		b = strconv.AppendInt(b, r, 10)
		f.end(fieldRemaining, len(b))
		b = strconv.AppendInt(b, t, 10)
		f.end(fieldReset, len(b))
		if mode&IETF == 0 {
			for i := range policies {
				if i > 0 {
					b = append(b, ", "...)
				}
				b = appendPolicyParams(b, policies[i].Result.Limit, "", now)
			}
			f.end(fieldPolicy, len(b))
		}
	}
	if mode&XRateLimit != 0 {
		b = strconv.AppendInt(b, q, 10)
		f.end(fieldXLimit, len(b))
		b = strconv.AppendInt(b, r, 10)
		f.end(fieldXRemaining, len(b))
		b = strconv.AppendInt(b, epochCeil(now.Add(resetD)), 10)
		f.end(fieldXReset, len(b))
	}
	return f.appendTo(dst, b)
}

// appendPolicyParams appends a policy's quota (after qKey), window and, if
// its capacity differs from its rate, its burst.
func appendPolicyParams(b []byte, l sluice.Limit, qKey string, now time.Time) []byte {
	q, w := QuotaAt(l, now)
	b = append(b, qKey...)
	b = strconv.AppendInt(b, q, 10)
	b = append(b, ";w="...)
	b = strconv.AppendInt(b, w, 10)
	if c := l.Capacity(); c != l.Rate {
		b = append(b, burstParam...)
		b = strconv.AppendInt(b, clamp(c), 10)
	}
	return b
}

// epochCeil returns t as Unix seconds rounded up, clamped to
// [0, maxInteger].
func epochCeil(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() != 0 {
		s++
	}
	return clamp(s)
}

// maxFields is the most fields one AppendFields appends: IETF's two,
// draft-06's three besides RateLimit-Policy, and X-RateLimit's three.
const maxFields = 8

// fields records where each value ends in the one buffer AppendFields
// builds every value in, so a call allocates one string whatever the mode.
// The buffer itself stays a local of AppendFields, on the stack.
type fields struct {
	keys [maxFields]string
	ends [maxFields]int
	n    int
}

// end records that key's value is the buffer from the previous value's end
// (or the start) up to offset end.
func (f *fields) end(key string, end int) {
	f.keys[f.n] = key
	f.ends[f.n] = end
	f.n++
}

// appendTo appends the fields, whose values buf holds, to dst: one string
// for all the values.
func (f *fields) appendTo(dst []Field, buf []byte) []Field {
	s := string(buf)
	start := 0
	for i := range f.n {
		dst = append(dst, Field{Name: f.keys[i], Value: s[start:f.ends[i]]})
		start = f.ends[i]
	}
	return dst
}
