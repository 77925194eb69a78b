package refusal

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

func TestRecordKnown(t *testing.T) {
	fixed := sluice.Hit{Key: "w", Limit: limit, Algorithm: sluice.FixedWindow}
	tests := []struct {
		name    string
		hit     sluice.Hit
		result  sluice.Result
		elapsed time.Duration
		check   sluice.Hit
		want    sluice.BucketState
		known   bool
	}{
		{"admitted, as said", hit("a", 1), sluice.Result{Allowed: true, Limit: limit, Remaining: 40, ResetAfter: 36 * time.Second}, 0, hit("a", 1),
			sluice.BucketState{Remaining: 40, ResetAfter: 36 * time.Second}, true},
		{"token bucket refills", hit("a", 1), sluice.Result{Allowed: true, Limit: limit, Remaining: 40, ResetAfter: 36 * time.Second}, 6 * time.Second, hit("a", 1),
			sluice.BucketState{Remaining: 50, ResetAfter: 30 * time.Second, Age: 6 * time.Second}, true},
		{"refused", hit("a", 1), sluice.Result{Limit: limit, RetryAfter: 600 * time.Millisecond, ResetAfter: time.Minute}, 100 * time.Millisecond, hit("a", 1),
			sluice.BucketState{Refused: true, RetryAfter: 500 * time.Millisecond, ResetAfter: time.Minute - 100*time.Millisecond, Age: 100 * time.Millisecond}, true},
		{"window holds until its reset", fixed, sluice.Result{Allowed: true, Limit: limit, Remaining: 10, ResetAfter: 20 * time.Second}, 19 * time.Second, fixed,
			sluice.BucketState{Remaining: 10, ResetAfter: time.Second, Age: 19 * time.Second}, true},
		{"window full after its reset", fixed, sluice.Result{Allowed: true, Limit: limit, Remaining: 10, ResetAfter: 20 * time.Second}, 20 * time.Second, fixed,
			sluice.BucketState{Remaining: 100, Age: 20 * time.Second}, true},
		{"other limit unknown", hit("a", 1), sluice.Result{Allowed: true, Limit: limit, Remaining: 40}, 0, sluice.Hit{Key: "a", Limit: sluice.PerMinute(5)}, sluice.BucketState{}, false},
		{"other group unknown", hit("a", 1), sluice.Result{Allowed: true, Limit: limit, Remaining: 40}, 0, sluice.Hit{Key: "a", Limit: limit, Group: "g"}, sluice.BucketState{}, false},
		{"remembered result says nothing", hit("a", 1), sluice.Result{Allowed: true, Limit: limit, Remembered: true}, 0, hit("a", 1), sluice.BucketState{}, false},
		{"failed hit's zero result says nothing", hit("a", 1), sluice.Result{}, 0, hit("a", 1), sluice.BucketState{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &clock{}
			r := NewRecord(64, c.now)
			r.Note([]sluice.Hit{tt.hit}, []sluice.Result{tt.result}, c.now())
			c.step(tt.elapsed)
			got, ok := r.Known(&tt.check, c.now())
			if ok != tt.known || got != tt.want {
				t.Errorf("Known = %+v, %v; want %+v, %v", got, ok, tt.want, tt.known)
			}
		})
	}
}

// TestRecordClaimOnce: a local fallback gets each thing the store said
// once; the store's next answer can be claimed again; a reset or refund
// forgets it.
func TestRecordClaimOnce(t *testing.T) {
	c := &clock{}
	r := NewRecord(64, c.now)
	h := hit("a", 1)
	note := func(left int64) {
		r.Note([]sluice.Hit{h}, []sluice.Result{{Limit: limit, Remaining: left, RetryAfter: time.Second, ResetAfter: time.Minute}}, c.now())
	}
	if _, ok := r.Claim(&h); ok {
		t.Fatal("claimed a bucket never said")
	}
	note(0)
	if st, ok := r.Claim(&h); !ok || !st.Refused || st.Remaining != 0 {
		t.Fatalf("first claim = %+v, %v", st, ok)
	}
	if _, ok := r.Claim(&h); ok {
		t.Fatal("claimed twice")
	}
	c.step(time.Millisecond)
	note(0)
	if _, ok := r.Claim(&h); !ok {
		t.Fatal("the store's next answer was not claimable")
	}
	note(0)
	r.Forget("a")
	if _, ok := r.Known(&h, c.now()); ok {
		t.Fatal("known after Forget")
	}
}

// TestRecordBounded: a flood of distinct buckets never grows the record;
// an evicted bucket is not known (a fallback starts it full, as it would
// have without a record); an older call's answer does not overwrite a
// newer one's.
func TestRecordBounded(t *testing.T) {
	c := &clock{}
	r := NewRecord(64, c.now)
	if r.Len() != 64 {
		t.Fatalf("Len %d", r.Len())
	}
	first := hit("first", 1)
	r.Note([]sluice.Hit{first}, []sluice.Result{{Limit: limit, Remaining: 3, ResetAfter: time.Minute, Allowed: true}}, c.now())
	for i := range 10000 {
		c.step(time.Microsecond)
		r.Note([]sluice.Hit{hit(fmt.Sprint(i), 1)}, []sluice.Result{{Limit: limit, Remaining: 1, ResetAfter: time.Minute, Allowed: true}}, c.now())
	}
	if _, ok := r.Known(&first, c.now()); ok {
		t.Error("the oldest bucket was kept through 10,000 others in 64 slots")
	}
	if len(r.slots) != 64 {
		t.Errorf("grew to %d slots", len(r.slots))
	}
	h := hit("x", 1)
	r.Note([]sluice.Hit{h}, []sluice.Result{{Limit: limit, Remaining: 7, ResetAfter: time.Minute, Allowed: true}}, c.now())
	r.Note([]sluice.Hit{h}, []sluice.Result{{Limit: limit, Remaining: 9, ResetAfter: time.Minute, Allowed: true}}, c.now()-1)
	if st, _ := r.Known(&h, c.now()); st.Remaining != 7 {
		t.Errorf("an older call's answer overwrote a newer one's: remaining %d, want 7", st.Remaining)
	}
}

// TestRecordNoAllocation: recording and reading cost the hit path nothing
// on the heap.
func TestRecordNoAllocation(t *testing.T) {
	c := &clock{}
	r := NewRecord(0, c.now)
	hits := []sluice.Hit{hit("a", 1), {Key: "b", Limit: limit, Group: "g", Algorithm: sluice.FixedWindow}}
	out := []sluice.Result{{Allowed: true, Limit: limit, Remaining: 5, ResetAfter: time.Second}, {Limit: limit, RetryAfter: time.Second, ResetAfter: time.Second}}
	if n := testing.AllocsPerRun(1000, func() {
		r.Note(hits, out, c.now())
		r.Known(&hits[0], c.now())
		r.Claim(&hits[1])
	}); n != 0 {
		t.Errorf("%v allocations a call", n)
	}
}

// TestAnswerReportsKnown: a call answered from memory reports, for its
// other hits, what the record knows of their buckets rather than 0.
func TestAnswerReportsKnown(t *testing.T) {
	c := &clock{}
	rec := NewRecord(64, c.now)
	m := New(time.Second, 64, c.now).Knowing(rec)
	hits := []sluice.Hit{hit("other", 1), hit("refused", 1), hit("unknown", 1)}
	out := []sluice.Result{
		{Allowed: true, Limit: limit, Remaining: 10, ResetAfter: 54 * time.Second},
		{Limit: limit, RetryAfter: 500 * time.Millisecond, ResetAfter: time.Minute},
		{},
	}
	sent := c.now()
	rec.Note(hits[:2], out[:2], sent)
	m.Remember(hits[:2], out[:2], sent)
	c.step(100 * time.Millisecond)
	got := make([]sluice.Result, 3)
	if !m.Answer(hits, got) {
		t.Fatal("not answered from memory")
	}
	if r := got[0]; !r.Allowed || !r.Remembered || r.Remaining != 10 || r.ResetAfter != 54*time.Second-100*time.Millisecond {
		t.Errorf("other hit: %+v, want allowed, remembered, 10 left", r)
	}
	if r := got[2]; !r.Allowed || !r.Remembered || r.Remaining != 0 || r.ResetAfter != 0 {
		t.Errorf("unknown hit: %+v, want allowed, remembered, 0", r)
	}
	if r := got[1]; r.Allowed {
		t.Errorf("refused hit: %+v", r)
	}
}

// TestRecordConcurrent: notes, reads, claims and forgets from many
// goroutines at once keep each slot consistent (run with -race).
func TestRecordConcurrent(t *testing.T) {
	r := NewRecord(8, nil)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				h := hit(fmt.Sprint((g+i)%13), 1)
				res := sluice.Result{Allowed: i%3 != 0, Limit: limit, Remaining: int64(i % 100), ResetAfter: time.Second}
				r.Note([]sluice.Hit{h}, []sluice.Result{res}, r.Now())
				if st, ok := r.Known(&h, r.Now()); ok && (st.Remaining < 0 || st.Remaining > limit.Capacity()) {
					t.Errorf("remaining %d out of range", st.Remaining)
					return
				}
				r.Claim(&h)
				if i%97 == 0 {
					r.Forget(h.Key)
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkRecord: what recording a decided two-hit call and reading a
// bucket back cost the hit path.
func BenchmarkRecord(b *testing.B) {
	r := NewRecord(0, nil)
	hits := []sluice.Hit{hit("a", 1), {Key: "b", Limit: limit, Group: "g"}}
	out := []sluice.Result{{Allowed: true, Limit: limit, Remaining: 5, ResetAfter: time.Second}, {Allowed: true, Limit: limit, Remaining: 7, ResetAfter: time.Second}}
	b.ReportAllocs()
	for b.Loop() {
		r.Note(hits, out, r.Now())
		r.Known(&hits[0], r.Now())
	}
}
