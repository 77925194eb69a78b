package refusal

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

type clock struct{ t int64 }

func (c *clock) now() int64                         { return c.t }
func (c *clock) step(d time.Duration)               { c.t += int64(d) }
func newMemory(c *clock, age time.Duration) *Memory { return New(age, 64, c.now) }

var limit = sluice.PerMinute(100)

func hit(key string, cost int64) sluice.Hit {
	return sluice.Hit{Key: key, Limit: limit, Cost: cost}
}

func refused(retry time.Duration) sluice.Result {
	return sluice.Result{Limit: limit, Remaining: 0, RetryAfter: retry, ResetAfter: time.Minute}
}

func TestAnswer(t *testing.T) {
	tests := []struct {
		name    string
		stored  sluice.Hit
		result  sluice.Result
		elapsed time.Duration // from the send to the check
		check   []sluice.Hit
		want    bool
	}{
		{"same cost, before retry", hit("a", 1), refused(600 * time.Millisecond), 599 * time.Millisecond, []sluice.Hit{hit("a", 1)}, true},
		{"same cost, at retry", hit("a", 1), refused(600 * time.Millisecond), 600 * time.Millisecond, []sluice.Hit{hit("a", 1)}, false},
		{"higher cost", hit("a", 2), refused(time.Second / 2), 0, []sluice.Hit{hit("a", 3)}, true},
		{"higher cost, window: to the store", sluice.Hit{Key: "a", Limit: limit, Algorithm: sluice.FixedWindow, Cost: 2}, refused(time.Second / 2), 0,
			[]sluice.Hit{{Key: "a", Limit: limit, Algorithm: sluice.FixedWindow, Cost: 3}}, false},
		{"higher cost over the capacity: to the store", hit("a", 2), refused(time.Second / 2), 0, []sluice.Hit{hit("a", 101)}, false},
		{"lower cost goes to the store", hit("a", 2), refused(time.Second / 2), 0, []sluice.Hit{hit("a", 1)}, false},
		{"capped at max age", hit("a", 1), refused(30 * time.Second), time.Second, []sluice.Hit{hit("a", 1)}, false},
		{"just under max age", hit("a", 1), refused(30 * time.Second), time.Second - 1, []sluice.Hit{hit("a", 1)}, true},
		{"other key", hit("a", 1), refused(time.Second), 0, []sluice.Hit{hit("b", 1)}, false},
		{"other limit", hit("a", 1), refused(time.Second), 0, []sluice.Hit{{Key: "a", Limit: sluice.PerMinute(200)}}, false},
		{"other algorithm", hit("a", 1), refused(time.Second), 0, []sluice.Hit{{Key: "a", Limit: limit, Algorithm: sluice.FixedWindow}}, false},
		{"other group", hit("a", 1), refused(time.Second), 0, []sluice.Hit{{Key: "a", Limit: limit, Group: "g"}}, false},
		{"shadow never answered", hit("a", 1), refused(time.Second), 0, []sluice.Hit{{Key: "a", Limit: limit, Shadow: true}}, false},
		{"peek never answered", hit("a", 1), refused(time.Second), 0, []sluice.Hit{{Key: "a", Limit: limit, Peek: true}}, false},
		{"forced never answered", hit("a", 1), refused(time.Second), 0, []sluice.Hit{{Key: "a", Limit: limit, Force: true}}, false},
		{"partial hit at its least cost", sluice.Hit{Key: "a", Limit: limit, Cost: 8, MinCost: 1}, refused(time.Second), 0,
			[]sluice.Hit{{Key: "a", Limit: limit, Cost: 4, MinCost: 1}}, true},
		{"one of several hits", hit("a", 1), refused(time.Second), 0, []sluice.Hit{hit("b", 1), hit("a", 1)}, true},
		{"beside a shadow hit", hit("a", 1), refused(time.Second), 0, []sluice.Hit{{Key: "b", Limit: limit, Shadow: true}, hit("a", 1)}, false},
		{"two hits on one bucket", hit("a", 1), refused(time.Second), 0, []sluice.Hit{hit("a", 1), hit("a", 1)}, false},
		{"beside a peek", hit("a", 1), refused(time.Second), 0, []sluice.Hit{hit("a", 1), {Key: "b", Limit: limit, Peek: true}}, false},
		{"unsatisfiable until max age", hit("a", 200), sluice.Result{Limit: limit, Unsatisfiable: true}, time.Second - 1, []sluice.Hit{hit("a", 200)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &clock{t: 1000}
			m := newMemory(c, time.Second)
			m.Remember([]sluice.Hit{tt.stored}, []sluice.Result{tt.result}, m.Now())
			c.step(tt.elapsed)
			out := make([]sluice.Result, len(tt.check))
			if got := m.Answer(tt.check, out); got != tt.want {
				t.Fatalf("Answer = %v, want %v", got, tt.want)
			}
			if !tt.want {
				return
			}
			if sluice.Admitted(tt.check, out) {
				t.Fatal("a request answered from memory was admitted")
			}
			for i, r := range out {
				if !r.Remembered {
					t.Errorf("out[%d] not marked Remembered", i)
				}
			}
		})
	}
}

func TestAnswerResults(t *testing.T) {
	c := &clock{t: 5}
	m := newMemory(c, time.Second)
	sent := m.Now()
	c.step(10 * time.Millisecond) // the answer comes back later
	m.Remember([]sluice.Hit{hit("a", 2), hit("b", 1)},
		[]sluice.Result{{Limit: limit, Remaining: 1, RetryAfter: 600 * time.Millisecond, ResetAfter: 59 * time.Second},
			{Allowed: true, Limit: limit, Remaining: 9}}, sent)
	c.step(100 * time.Millisecond)
	hits := []sluice.Hit{hit("b", 1), hit("a", 2)}
	out := make([]sluice.Result, 2)
	if !m.Answer(hits, out) {
		t.Fatal("not answered")
	}
	// Counted from the send: 600 ms - 110 ms.
	want := sluice.Result{Limit: limit, Remaining: 1, RetryAfter: 490 * time.Millisecond, ResetAfter: 59*time.Second - 110*time.Millisecond, Remembered: true}
	if out[1] != want {
		t.Errorf("refused hit: %+v, want %+v", out[1], want)
	}
	if want := (sluice.Result{Allowed: true, Limit: limit, Remembered: true}); out[0] != want {
		t.Errorf("undecided hit: %+v, want %+v", out[0], want)
	}
	// A higher cost waits one emission interval (600 ms) a unit more.
	if !m.Answer([]sluice.Hit{hit("a", 4)}, out[:1]) || out[0].RetryAfter != 490*time.Millisecond+2*600*time.Millisecond {
		t.Errorf("cost 4 after a refusal of 2: %+v", out[0])
	}
	// A passing hit is not remembered as refused.
	if m.Answer([]sluice.Hit{hit("b", 1)}, out) {
		t.Error("a passed hit answered from memory")
	}
}

func TestRememberSkips(t *testing.T) {
	c := &clock{}
	m := newMemory(c, time.Second)
	for _, tt := range []struct {
		name string
		h    sluice.Hit
		r    sluice.Result
	}{
		{"shadow", sluice.Hit{Key: "a", Limit: limit, Shadow: true}, refused(time.Second)},
		{"peek", sluice.Hit{Key: "a", Limit: limit, Peek: true}, refused(time.Second)},
		{"forced", sluice.Hit{Key: "a", Limit: limit, Force: true}, refused(time.Second)},
		{"no retry time", hit("a", 1), sluice.Result{Limit: limit}},
		{"itself remembered", hit("a", 1), sluice.Result{Limit: limit, RetryAfter: time.Second, Remembered: true}},
	} {
		m.Remember([]sluice.Hit{tt.h}, []sluice.Result{tt.r}, 0)
		if m.Answer([]sluice.Hit{hit("a", 1)}, make([]sluice.Result, 1)) {
			t.Errorf("%s: remembered", tt.name)
		}
	}
}

// A hit decided after another hit on its bucket in the same call was
// decided as if that one had consumed: its refusal is not its own.
func TestRememberSkipsASharedBucket(t *testing.T) {
	m := newMemory(&clock{}, time.Second)
	other := sluice.Hit{Key: "a", Limit: sluice.PerSecond(5), Cost: 5}
	m.Remember([]sluice.Hit{other, hit("a", 1)}, []sluice.Result{{Allowed: true, Limit: other.Limit}, refused(time.Second)}, 0)
	if m.Answer([]sluice.Hit{hit("a", 1)}, make([]sluice.Result, 1)) {
		t.Error("a refusal decided after a hit on the same bucket was remembered")
	}
}

func TestForget(t *testing.T) {
	m := newMemory(&clock{}, time.Second)
	m.Remember([]sluice.Hit{hit("a", 1)}, []sluice.Result{refused(time.Second)}, 0)
	m.Forget("a")
	if m.Answer([]sluice.Hit{hit("a", 1)}, make([]sluice.Result, 1)) {
		t.Error("answered after Forget")
	}
}

func TestOff(t *testing.T) {
	m := New(-1, 0, nil)
	if m != nil {
		t.Fatal("negative max age: memory not off")
	}
	m.Remember([]sluice.Hit{hit("a", 1)}, []sluice.Result{refused(time.Second)}, 0)
	if m.Answer([]sluice.Hit{hit("a", 1)}, make([]sluice.Result, 1)) {
		t.Error("a nil memory answered")
	}
	m.Forget("a")
}

func TestValidate(t *testing.T) {
	if err := Validate("x", -1); !errors.Is(err, sluice.ErrInvalidConfig) {
		t.Errorf("negative size: %v", err)
	}
	if err := Validate("x", 0); err != nil {
		t.Error(err)
	}
}

// A flood of distinct keys never grows the memory: it holds at most its
// slots, and a key refused again after the flood is remembered again.
func TestBounded(t *testing.T) {
	c := &clock{}
	m := New(time.Second, 64, c.now)
	for i := range 100000 {
		m.Remember([]sluice.Hit{hit(fmt.Sprint(i), 1)}, []sluice.Result{refused(time.Second)}, 0)
	}
	if len(m.slots) != 64 {
		t.Fatalf("%d slots, want 64", len(m.slots))
	}
	live := 0
	for i := range m.slots {
		if m.slots[i].Load() != nil {
			live++
		}
	}
	if live > 64 {
		t.Fatalf("%d entries", live)
	}
	m.Remember([]sluice.Hit{hit("again", 1)}, []sluice.Result{refused(time.Second)}, 0)
	if !m.Answer([]sluice.Hit{hit("again", 1)}, make([]sluice.Result, 1)) {
		t.Error("a fresh refusal was not remembered in a full memory")
	}
}

func TestAnswerAllocatesNothing(t *testing.T) {
	m := newMemory(&clock{}, time.Second)
	hits := []sluice.Hit{hit("a", 1), hit("b", 1)}
	m.Remember(hits[1:], []sluice.Result{refused(time.Second)}, 0)
	out := make([]sluice.Result, 2)
	if n := testing.AllocsPerRun(100, func() { m.Answer(hits, out) }); n != 0 {
		t.Errorf("Answer allocates %v times", n)
	}
}

func BenchmarkAnswer(b *testing.B) {
	m := New(time.Second, 0, nil)
	hits := []sluice.Hit{hit("a", 1)}
	out := make([]sluice.Result, 1)
	b.Run("miss", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.Answer(hits, out)
		}
	})
	m.Remember(hits, []sluice.Result{refused(time.Hour)}, m.Now())
	b.Run("refused", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			o := make([]sluice.Result, 1)
			for pb.Next() {
				m.Answer(hits, o)
			}
		})
	})
}
