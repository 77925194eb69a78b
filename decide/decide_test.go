package decide_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

var quiet = decide.WithLogger(slog.New(slog.DiscardHandler))

// down is a store failure whose breaker stays open for retry.
func down(retry time.Duration) error {
	return &sluice.StoreError{Op: "test: take", Kind: sluice.ErrUnavailable, RetryAfter: retry}
}

// failingStore fails every call with err.
type failingStore struct{ err error }

func (s failingStore) Take(context.Context, []sluice.Hit, []sluice.Result) error { return s.err }

// partialStore fails its calls' first hit and decides the others as its
// results say (allowed, taking their cost, unless refused is set).
type partialStore struct {
	refused bool
	mu      sync.Mutex
	refunds []sluice.Refund
}

func (s *partialStore) Take(context.Context, []sluice.Hit, []sluice.Result) error {
	return down(0)
}

func (s *partialStore) TakePartial(_ context.Context, hits []sluice.Hit, out []sluice.Result) error {
	for i := 1; i < len(hits); i++ {
		out[i] = sluice.Result{Allowed: !s.refused, Limit: hits[i].Limit, Remaining: 4, RetryAfter: 7 * time.Second}
		if !s.refused {
			out[i].Receipt = sluice.Receipt{Taken: hits[i].Units(), Mark: 1}
		}
	}
	return &sluice.PartialError{Failed: []int{0}, Err: down(0)}
}

func (s *partialStore) Refund(_ context.Context, refunds []sluice.Refund) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refunds = append(s.refunds, refunds...)
	return nil
}

// outcomes records the observed decisions as "rule:outcome".
type outcomes struct {
	mu   sync.Mutex
	list []string
}

func (o *outcomes) Observe(_ context.Context, d sluice.Decision) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.list = append(o.list, d.Rule+":"+d.Outcome.String())
}

func (o *outcomes) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.Join(o.list, " ")
}

// result is what a test reads of an Outcome.
type result struct {
	verdict  decide.Verdict
	decided  string // per rule: s (store), l (local), - (nobody)
	refusing string // per rule: x refusing, . not
	headers  bool
	retry    time.Duration
}

func summarize(d *decide.Outcome) result {
	// Rounded: the local fallback decides on the real clock.
	r := result{verdict: d.Verdict, headers: d.Headers(), retry: d.RetryAfter.Round(time.Second)}
	for i := range d.Results {
		switch {
		case !d.Decided(i):
			r.decided += "-"
		case d.Local[i]:
			r.decided += "l"
		default:
			r.decided += "s"
		}
		if d.Refusing(i) {
			r.refusing += "x"
		} else {
			r.refusing += "."
		}
	}
	return r
}

// TestDecide: the verdict, who decided each rule, which rules refuse,
// whether headers describe the request, the retry delay, and what the
// observer sees, for each way a store can answer.
func TestDecide(t *testing.T) {
	rule := func(name string, limit sluice.Limit, f rules.OnFail, shadow bool) rules.Rule {
		return rules.Rule{Name: name, Key: keyfunc.Global(), Limit: limit, OnFail: f, Shadow: shadow}
	}
	perMin := sluice.PerMinute(1)
	tests := []struct {
		name     string
		store    func() sluice.Store
		rules    []rules.Rule
		requests int // the last one is checked
		want     result
		observed string
	}{
		{name: "admitted", rules: []rules.Rule{rule("a", perMin, rules.FailLocal, false)}, requests: 1,
			want: result{verdict: decide.Admitted, decided: "s", refusing: ".", headers: true}, observed: "a:allowed"},
		{name: "refused", rules: []rules.Rule{rule("a", perMin, rules.FailLocal, false), rule("b", sluice.PerMinute(9), rules.FailLocal, false)}, requests: 2,
			want: result{verdict: decide.Refused, decided: "ss", refusing: "x.", headers: true, retry: time.Minute}, observed: "a:denied b:allowed"},
		{name: "a shadow rule never refuses", rules: []rules.Rule{rule("a", perMin, rules.FailLocal, true)}, requests: 2,
			want: result{verdict: decide.Admitted, decided: "s", refusing: ".", headers: true}, observed: "a:shadow_denied"},
		{name: "closed", store: func() sluice.Store { return failingStore{down(3 * time.Second)} },
			rules: []rules.Rule{rule("a", perMin, rules.FailClosed, false), rule("b", perMin, rules.FailOpen, false)}, requests: 1,
			want: result{verdict: decide.Unavailable, decided: "--", refusing: "..", retry: 3 * time.Second}, observed: "a:failed_closed b:failed_open"},
		{name: "closed, at least a second", store: func() sluice.Store { return failingStore{down(0)} },
			rules: []rules.Rule{rule("a", perMin, rules.FailClosed, false)}, requests: 1,
			want: result{verdict: decide.Unavailable, decided: "-", refusing: ".", retry: time.Second}, observed: "a:failed_closed"},
		{name: "a closed shadow rule fails open", store: func() sluice.Store { return failingStore{down(0)} },
			rules: []rules.Rule{rule("a", perMin, rules.FailClosed, true)}, requests: 1,
			want: result{verdict: decide.Admitted, decided: "-", refusing: "."}, observed: "a:failed_open"},
		{name: "local refuses on its share", store: func() sluice.Store { return failingStore{down(0)} },
			rules: []rules.Rule{rule("a", perMin, rules.FailLocal, false), rule("b", perMin, rules.FailOpen, false)}, requests: 2,
			want: result{verdict: decide.Refused, decided: "l-", refusing: "x.", retry: time.Minute}, observed: "a:local b:failed_open"},
		{name: "partial, admitted", store: func() sluice.Store { return &partialStore{} },
			rules: []rules.Rule{rule("a", perMin, rules.FailOpen, false), rule("b", perMin, rules.FailLocal, false)}, requests: 1,
			want: result{verdict: decide.Admitted, decided: "-s", refusing: "..", headers: true}, observed: "a:failed_open b:allowed"},
		{name: "partial, refused by a decided rule", store: func() sluice.Store { return &partialStore{refused: true} },
			rules: []rules.Rule{rule("a", perMin, rules.FailOpen, false), rule("b", perMin, rules.FailLocal, false)}, requests: 1,
			want: result{verdict: decide.Refused, decided: "-s", refusing: ".x", headers: true, retry: 7 * time.Second}, observed: "a:failed_open b:denied"},
		{name: "partial, closed", store: func() sluice.Store { return &partialStore{} },
			rules: []rules.Rule{rule("a", perMin, rules.FailClosed, false), rule("b", perMin, rules.FailLocal, false)}, requests: 1,
			want: result{verdict: decide.Unavailable, decided: "-s", refusing: "..", retry: time.Second}, observed: "a:failed_closed b:allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var store sluice.Store
			if tt.store != nil {
				store = tt.store()
			} else {
				mem := memstore.New(memstore.Config{Clock: storetest.NewClock(time.Unix(1_700_000_000, 0))})
				defer mem.Close(context.Background())
				store = mem
			}
			obs := &outcomes{}
			dc, err := decide.New(store, decide.WithObserver(obs), quiet)
			if err != nil {
				t.Fatal(err)
			}
			set := rules.MustNew(tt.rules...)
			var d *decide.Outcome
			for range tt.requests {
				obs.list = nil
				if d != nil {
					d.Finish(context.Background(), 0)
				}
				d = dc.Check(set, httptest.NewRequest("GET", "/", nil), nil)
			}
			defer d.Finish(context.Background(), 0)
			if got := summarize(d); got != tt.want {
				t.Errorf("got %+v, want %+v (err %v)", got, tt.want, d.Err)
			}
			if got := obs.String(); got != tt.observed {
				t.Errorf("observed %q, want %q", got, tt.observed)
			}
		})
	}
}

// TestPartialGiveBack: a request refused by a failed rule's policy after a
// partial failure gives back what its decided rules took; one admitted
// keeps it.
func TestPartialGiveBack(t *testing.T) {
	for _, tt := range []struct {
		onFail  rules.OnFail
		refunds int
	}{{rules.FailClosed, 1}, {rules.FailOpen, 0}} {
		t.Run(tt.onFail.String(), func(t *testing.T) {
			store := &partialStore{}
			dc, err := decide.New(store, quiet)
			if err != nil {
				t.Fatal(err)
			}
			set := rules.MustNew(
				rules.Rule{Name: "a", Key: keyfunc.Global(), Limit: sluice.PerMinute(1), OnFail: tt.onFail},
				rules.Rule{Name: "b", Key: keyfunc.Global(), Limit: sluice.PerMinute(5)},
			)
			d := dc.Check(set, httptest.NewRequest("GET", "/", nil), nil)
			defer d.Finish(context.Background(), 0)
			if len(store.refunds) != tt.refunds {
				t.Fatalf("%d refunds, want %d", len(store.refunds), tt.refunds)
			}
			if tt.refunds > 0 && store.refunds[0].Hit.Key != d.Hits[1].Key {
				t.Errorf("refunded %q, want the decided rule's %q", store.refunds[0].Hit.Key, d.Hits[1].Key)
			}
			var pe *sluice.PartialError
			if !errors.As(d.Err, &pe) {
				t.Errorf("Err %v, want a PartialError", d.Err)
			}
		})
	}
}

// TestNoRules: a request that matched no rules is admitted without a
// store call.
func TestNoRules(t *testing.T) {
	dc, err := decide.New(failingStore{down(0)}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	d := dc.Decide(context.Background(), &rules.Matched{})
	defer d.Finish(context.Background(), 0)
	if d.Verdict != decide.Admitted || d.Err != nil || d.Headers() {
		t.Errorf("got %v, err %v, headers %v", d.Verdict, d.Err, d.Headers())
	}
}

// TestOptions: a nil store and invalid options are ConfigErrors wrapping
// sluice.ErrInvalidConfig.
func TestOptions(t *testing.T) {
	mem := memstore.New(memstore.Config{})
	defer mem.Close(context.Background())
	tests := []struct {
		name  string
		store sluice.Store
		opt   decide.Option
		want  string
	}{
		{"nil store", nil, nil, "decide: New: nil store"},
		{"nil option", mem, nil, "decide: nil Option"},
		{"zero budget", mem, decide.WithBudget(0), "decide: WithBudget: 0s: must be positive"},
		{"nil observer", mem, decide.WithObserver(nil), "decide: WithObserver: nil observer"},
		{"nil logger", mem, decide.WithLogger(nil), "decide: WithLogger: nil logger"},
		{"no instances", mem, decide.WithInstances(0), "decide: WithInstances: 0: must be at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dc, err := decide.New(tt.store, tt.opt)
			var ce *decide.ConfigError
			if dc != nil || !errors.As(err, &ce) || !errors.Is(err, sluice.ErrInvalidConfig) || err.Error() != tt.want {
				t.Fatalf("got %v, want %q wrapping ErrInvalidConfig", err, tt.want)
			}
		})
	}
}

// TestFailureLogNamesEachDecision: the store-failure log line names what
// decided each rule the store failed: the local fallback, or its policy,
// open or closed.
func TestFailureLogNamesEachDecision(t *testing.T) {
	rule := func(name string, f rules.OnFail) rules.Rule {
		return rules.Rule{Name: name, Key: keyfunc.Global(), Limit: sluice.PerMinute(5), OnFail: f}
	}
	for _, tt := range []struct {
		rules []rules.Rule
		want  string
	}{
		{[]rules.Rule{rule("a", rules.FailLocal), rule("b", rules.FailOpen)}, "decisions.a=local decisions.b=open"},
		{[]rules.Rule{rule("a", rules.FailClosed)}, "decisions.a=closed"},
	} {
		var buf strings.Builder
		log := slog.New(slog.NewTextHandler(&buf, nil))
		dc, err := decide.New(failingStore{down(0)}, decide.WithLogger(log))
		if err != nil {
			t.Fatal(err)
		}
		dc.Check(rules.MustNew(tt.rules...), httptest.NewRequest("GET", "/", nil), nil).Finish(context.Background(), 0)
		if got := buf.String(); !strings.Contains(got, "store failed; rules applied their on_fail policy") || !strings.Contains(got, tt.want) {
			t.Errorf("logged %q, want %q", got, tt.want)
		}
	}
}
