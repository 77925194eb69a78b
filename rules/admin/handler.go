package admin

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/rules"
)

// maxBody bounds a request body, in bytes.
const maxBody = 8 << 10

type handler struct {
	config
	store sluice.Store
	mux   *http.ServeMux
}

// New returns the operator handler for the rules src provides, whose
// buckets live in store (the store the middleware uses). An application
// with several limiters on the store (chi's r.Use for every route, r.With
// for one) passes the rules of the others with [WithRules], so that one
// handler covers them all. New refuses a nil store or source and an
// invalid option, with an error wrapping [sluice.ErrInvalidConfig]. See the
// package documentation for the routes.
func New(store sluice.Store, src rules.Source, opts ...Option) (http.Handler, error) {
	if store == nil || src == nil || isNilSet(src) {
		return nil, fmt.Errorf("%w: admin: New: nil store or rule source", sluice.ErrInvalidConfig)
	}
	h := &handler{store: store, config: config{log: slog.Default(), srcs: []rules.Source{src}}}
	h.parsers = map[string]IdentityParser{}
	for _, o := range opts {
		if err := o.apply(&h.config); err != nil {
			return nil, err
		}
	}
	if _, set := h.parsers["ip"]; !set && h.ipParse != nil {
		h.parsers["ip"] = h.ipParse
	}
	if h.secret == nil {
		h.secret = make([]byte, 32)
		_, _ = rand.Read(h.secret)
	}
	h.mux = http.NewServeMux()
	h.mux.HandleFunc("GET /rules", h.listRules)
	h.mux.HandleFunc("POST /inspect", func(w http.ResponseWriter, r *http.Request) { h.serve(w, r, false) })
	h.mux.HandleFunc("POST /reset", func(w http.ResponseWriter, r *http.Request) { h.serve(w, r, true) })
	return h, nil
}

// MustNew is like [New] but panics on an error; for a handler whose
// store, rules and options are fixed in code.
func MustNew(store sluice.Store, src rules.Source, opts ...Option) http.Handler {
	h, err := New(store, src, opts...)
	if err != nil {
		panic(err)
	}
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, pattern := h.mux.Handler(r); pattern == "" {
		if allow, ok := routes[r.URL.Path]; ok {
			w.Header().Set("Allow", allow)
			writeProblem(w, http.StatusMethodNotAllowed, "Method Not Allowed", r.URL.Path+" takes "+allow)
			return
		}
		writeProblem(w, http.StatusNotFound, "Not Found", "routes: GET /rules, POST /inspect, POST /reset")
		return
	}
	h.mux.ServeHTTP(w, r)
}

// routes maps each path to its method.
var routes = map[string]string{"/rules": http.MethodGet, "/inspect": http.MethodPost, "/reset": http.MethodPost}

// query is the body of /inspect and /reset.
type query struct {
	Rule     string   `json:"rule"`
	Kind     string   `json:"kind"`
	Identity identity `json:"identity"`
}

// Bucket is one rule's bucket for one identity, as /inspect and /reset
// answer it.
type Bucket struct {
	// Rule is the name of the rule the bucket belongs to.
	Rule string `json:"rule"`
	// Kind is the kind of key the rule's key function returns, such as
	// "ip" or "api_key".
	Kind string `json:"kind"`
	// Identity is the identity as the rule's key function returns it
	// (an ip identity grouped by its prefix, for instance; a joined key's
	// parts encoded as [keyfunc.Join] encodes them), not as typed.
	Identity string `json:"identity"`
	// Limit is the rule's limit for the identity (an override's, when one
	// names it: see [rules.Rule.Overrides]), as [sluice.Limit.String]
	// writes it.
	Limit string `json:"limit"`
	// Algorithm is the name of the algorithm enforcing the limit.
	Algorithm string `json:"algorithm"`
	// Cost is what one request takes from the bucket.
	Cost int64 `json:"cost"`
	// Shadow reports a dry-run rule: counted, never refusing.
	Shadow bool `json:"shadow,omitempty"`
	// Allowed says whether a request of the rule's cost would pass now.
	Allowed bool `json:"allowed"`
	// Remaining is how much of the bucket's capacity is left.
	Remaining int64 `json:"remaining"`
	// Used is, for the window algorithms, what the current period has
	// counted: the limit less what remains (the sliding window counts the
	// previous window by its overlap). nil for a token bucket, whose
	// ResetAfterMS is the time until it is full again.
	Used *int64 `json:"used,omitempty"`
	// ResetAfterMS is the time until the bucket is full again.
	ResetAfterMS int64 `json:"reset_after_ms"`
	// RetryAfterMS is, when not Allowed, the time until a request of the
	// rule's cost would pass.
	RetryAfterMS int64 `json:"retry_after_ms"`
	// Blocked reports that the identity is blocked by the rule's penalty
	// ([rules.Penalty]): RetryAfterMS is then the time left in the block,
	// which a reset lifts.
	Blocked bool `json:"blocked,omitempty"`
	// PeriodStart and PeriodEnd are, for a calendar limit, the bounds of
	// its current period in its zone, in RFC 3339: Used counts from
	// PeriodStart, and the bucket is whole again at PeriodEnd. Empty for
	// any other limit.
	PeriodStart string `json:"period_start,omitempty"`
	// PeriodEnd is, for a calendar limit, the end of its current period
	// (see PeriodStart). Empty for any other limit.
	PeriodEnd string `json:"period_end,omitempty"`
}

// match is one rule selected by a query, with its hit for the identity.
type match struct {
	rule *rules.Rule
	id   string
	hit  sluice.Hit
}

func (h *handler) serve(w http.ResponseWriter, r *http.Request, reset bool) {
	q, status, detail := decodeQuery(w, r)
	if status != 0 {
		writeProblem(w, status, http.StatusText(status), detail)
		return
	}
	ms, status, detail := h.resolve(q)
	if status != 0 {
		writeProblem(w, status, http.StatusText(status), detail)
		return
	}
	if reset {
		hits := make([]sluice.Hit, len(ms))
		for i := range ms {
			hits[i] = ms[i].hit
		}
		if err := resetBuckets(r.Context(), h.store, hits); errors.Is(err, errors.ErrUnsupported) {
			// Not a store failure: the store, or one it wraps, has no
			// reset. The answer says so whichever refused.
			writeProblem(w, http.StatusNotImplemented, "Not Implemented", err.Error())
			return
		} else if err != nil {
			h.storeFailed(w, r, "reset", err)
			return
		}
		h.audit(r.Context(), r, ms)
	}
	out, err := h.inspect(r.Context(), ms)
	if err != nil {
		h.storeFailed(w, r, "inspect", err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Buckets []Bucket `json:"buckets"`
	}{out})
}

// decodeQuery reads a query body; a status of 0 means it is well formed.
func decodeQuery(w http.ResponseWriter, r *http.Request) (q query, status int, detail string) {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&q); err != nil {
		return q, http.StatusBadRequest, "the body is not a JSON object of rule (or kind) and identity"
	}
	if _, err := dec.Token(); err != io.EOF {
		return q, http.StatusBadRequest, "the body holds more than one JSON value"
	}
	if (q.Rule == "") == (q.Kind == "") {
		return q, http.StatusBadRequest, `name a rule ("rule") or a key kind ("kind"), not both`
	}
	return q, 0, ""
}

// resolve selects the rules q names and parses its identity for each.
func (h *handler) resolve(q query) (ms []match, status int, detail string) {
	all := h.rules()
	seen := make(map[sluice.Hit]bool)
	for i := range all {
		rule := &all[i]
		if q.Rule != "" && rule.Name != q.Rule || q.Kind != "" && rule.Key.Kind() != q.Kind {
			continue
		}
		id, err := h.parseIdentity(rule.Key, q.Identity)
		if err != nil {
			return nil, http.StatusBadRequest, fmt.Sprintf("rule %q keys on %s: malformed identity: %s", rule.Name, rule.Key.Kind(), describe(err))
		}
		hit := sluice.Hit{
			Key:       rules.BucketKey(rule.Name, rule.Key.Kind(), id),
			Limit:     rule.LimitFor(id), // an override's, if one names id
			Algorithm: rule.Algorithm,
			Cost:      rule.Cost,
			Peek:      true,
		}
		if p := rule.Penalty; p != nil {
			hit.Block, hit.After = p.Block, p.After // a peek then reports the block
		}
		if seen[hit] {
			continue // the same rule in two limiters' sets: one bucket
		}
		seen[hit] = true
		ms = append(ms, match{rule: rule, id: id, hit: hit})
	}
	if len(ms) == 0 {
		if q.Rule != "" {
			return nil, http.StatusNotFound, fmt.Sprintf("no rule named %q", q.Rule)
		}
		return nil, http.StatusNotFound, fmt.Sprintf("no rule keys on %q", q.Kind)
	}
	return ms, 0, ""
}

// inspect peeks at the buckets of ms.
func (h *handler) inspect(ctx context.Context, ms []match) ([]Bucket, error) {
	hits := make([]sluice.Hit, len(ms))
	for i := range ms {
		hits[i] = ms[i].hit
	}
	res := make([]sluice.Result, len(hits))
	if err := h.store.Take(ctx, hits, res); err != nil {
		return nil, err
	}
	out := make([]Bucket, len(ms))
	for i, m := range ms {
		out[i] = Bucket{
			Rule: m.rule.Name, Kind: m.rule.Key.Kind(), Identity: m.id,
			Limit: m.hit.Limit.String(), Algorithm: m.rule.Algorithm.String(),
			Cost: m.hit.Units(), Shadow: m.rule.Shadow,
			Allowed: res[i].Allowed, Remaining: res[i].Remaining, Blocked: res[i].Blocked,
			ResetAfterMS: ceilMillis(res[i].ResetAfter), RetryAfterMS: ceilMillis(res[i].RetryAfter),
		}
		if m.hit.Algorithm != sluice.TokenBucket {
			used := max(m.hit.Limit.Capacity()-res[i].Remaining, 0)
			out[i].Used = &used
		}
		setPeriod(&out[i], m.hit.Limit, h.now())
	}
	return out, nil
}

// audit logs and counts the resets of ms.
func (h *handler) audit(ctx context.Context, r *http.Request, ms []match) {
	ro, _ := h.observer.(sluice.ResetObserver)
	for _, m := range ms {
		h.log.LogAttrs(ctx, slog.LevelInfo, "admin: bucket reset",
			slog.String("rule", m.rule.Name),
			slog.String("kind", m.rule.Key.Kind()),
			slog.String("identity_hash", h.hash(m.id)),
			slog.String("remote_addr", r.RemoteAddr))
		if ro != nil {
			ro.ObserveReset(ctx, m.rule.Name)
		}
	}
}

// hash is the keyed hash under which logs name an identity.
func (h *handler) hash(id string) string {
	mac := hmac.New(sha256.New, h.secret)
	mac.Write([]byte(id))
	return hex.EncodeToString(mac.Sum(nil)[:12])
}

// resetBuckets resets hits in store, or returns an error wrapping
// [errors.ErrUnsupported] if store is not a [sluice.Resetter], as
// [sluice.Limiter.Reset] does.
func resetBuckets(ctx context.Context, store sluice.Store, hits []sluice.Hit) error {
	rs, ok := store.(sluice.Resetter)
	if !ok {
		return fmt.Errorf("admin: the store (%T) cannot reset buckets: %w", store, errors.ErrUnsupported)
	}
	return rs.Reset(ctx, hits)
}

func (h *handler) storeFailed(w http.ResponseWriter, r *http.Request, op string, err error) {
	h.log.LogAttrs(r.Context(), slog.LevelError, "admin: store failed", slog.String("op", op), slog.String("error", err.Error()))
	detail := "the store could not " + op + " the buckets"
	if sluice.IsAmbiguous(err) {
		detail += "; the " + op + " may have been applied"
	}
	writeProblem(w, http.StatusBadGateway, "Bad Gateway", detail)
}

// RuleInfo describes one rule, as /rules lists it.
type RuleInfo struct {
	// Name is the rule's name, which /inspect and /reset take.
	Name string `json:"name"`
	// Kind is the kind of key the rule's key function returns, which
	// decides how an identity is typed (see the package documentation).
	Kind string `json:"kind"`
	// Limit is the rule's limit, as [sluice.Limit.String] writes it.
	Limit string `json:"limit"`
	// Algorithm is the name of the algorithm enforcing the limit.
	Algorithm string `json:"algorithm"`
	// Cost is what one request takes from its bucket.
	Cost int64 `json:"cost"`
	// Shadow reports a dry-run rule: counted, never refusing.
	Shadow bool `json:"shadow,omitempty"`
}

func (h *handler) listRules(w http.ResponseWriter, _ *http.Request) {
	out := []RuleInfo{}
	for _, r := range h.rules() {
		info := RuleInfo{Name: r.Name, Kind: r.Key.Kind(), Limit: r.Limit.String(), Algorithm: r.Algorithm.String(), Cost: r.Cost, Shadow: r.Shadow}
		if !slices.Contains(out, info) {
			out = append(out, info)
		}
	}
	writeJSON(w, http.StatusOK, struct {
		Rules []RuleInfo `json:"rules"`
	}{out})
}

func ceilMillis(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}
