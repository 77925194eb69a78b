package hotkey

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// events records what a detector turns.
type events struct{ hot, cooled map[string]int }

func newEvents() *events { return &events{hot: map[string]int{}, cooled: map[string]int{}} }

func (e *events) config(threshold int64, topK int) Config[string] {
	return Config[string]{
		Threshold: threshold,
		TopK:      topK,
		OnHot:     func(key string) string { e.hot[key]++; return "kept with " + key },
		OnCool:    func(key string) { e.cooled[key]++ },
	}
}

const t0 = 1_700_000_000 * window // a window's start, in µs

// A key turns hot at the threshold within a window, among noise, and
// reports the change once; a whole window under it cools it.
func TestHotAtThreshold(t *testing.T) {
	ev := newEvents()
	d := New(ev.config(100, 4))
	now := int64(t0)
	for i := range 100 {
		d.Observe(fmt.Sprint("noise", i), 1, now)
		hot, changed := d.Observe("k", 1, now)
		if want := i == 99; hot != want || changed != want {
			t.Fatalf("check %d: hot %v, changed %v; want %v, %v", i+1, hot, changed, want, want)
		}
		now += 100
	}
	if hot, changed := d.Observe("k", 1, now); !hot || changed {
		t.Fatalf("over the threshold: hot %v, changed %v; want true, false", hot, changed)
	}
	if v, hot := d.Lookup("k", now); !hot || v != "kept with k" {
		t.Fatalf("Lookup = %q, %v; want what OnHot returned, true", v, hot)
	}
	if _, hot := d.Lookup("noise1", now); hot {
		t.Fatal("a key seen once is hot")
	}
	// The next window at the threshold keeps it hot; one under it cools
	// it at the start of the window after.
	for range 100 {
		d.Observe("k", 1, t0+window)
	}
	if _, hot := d.Lookup("k", t0+2*window); !hot || ev.cooled["k"] != 0 {
		t.Fatalf("hot %v, cooled %d times after a window at the threshold; want hot, never cooled", hot, ev.cooled["k"])
	}
	d.Observe("k", 99, t0+2*window)
	if _, hot := d.Lookup("k", t0+3*window); hot || ev.cooled["k"] != 1 || ev.hot["k"] != 1 {
		t.Fatalf("after a window under the threshold: hot %v, turned hot %d and cooled %d times; want cooled once", hot, ev.hot["k"], ev.cooled["k"])
	}
}

// A skipped window (no traffic at all) cools every key.
func TestQuietWindowCools(t *testing.T) {
	ev := newEvents()
	d := New(ev.config(5, 4))
	d.Observe("k", 10, t0)
	d.Observe("k", 1, t0+2*window)
	if ev.cooled["k"] != 1 || d.Len() != 0 {
		t.Fatalf("cooled %d times, %d keys tracked; want 1, 0", ev.cooled["k"], d.Len())
	}
}

// Weights count: one observation of the threshold's weight is hot.
func TestWeight(t *testing.T) {
	d := New(newEvents().config(64, 4))
	if hot, _ := d.Observe("k", 63, t0); hot {
		t.Fatal("hot under the threshold")
	}
	if hot, _ := d.Observe("k", 1, t0); !hot {
		t.Fatal("not hot at the threshold")
	}
}

// A Zipf stream over many keys: at most TopK keys are tracked, the
// heaviest is among them, and every key that turned hot and left the
// slots cooled.
func TestTopKBounded(t *testing.T) {
	ev := newEvents()
	d := New(ev.config(50, 8))
	zipf := rand.NewZipf(rand.New(rand.NewPCG(1, 2)), 1.2, 1, 9_999)
	for i := range 20_000 {
		d.Observe(fmt.Sprint("k", zipf.Uint64()), 1, t0+int64(i)*50) // 1 s
		if n := d.Len(); n > 8 {
			t.Fatalf("%d keys tracked, want at most TopK = 8", n)
		}
	}
	if _, hot := d.Lookup("k0", t0+window-1); !hot {
		t.Fatal("the heaviest key is not hot")
	}
	hot := 0
	for k, n := range ev.hot {
		if _, now := d.Lookup(k, t0+window-1); now {
			hot++
			n--
		}
		if n != ev.cooled[k] {
			t.Fatalf("%s turned hot %d times, cooled %d times", k, ev.hot[k], ev.cooled[k])
		}
	}
	if hot > 8 {
		t.Fatalf("%d keys hot, want at most 8", hot)
	}
}

// Forget and CoolAll cool the keys they drop.
func TestForgetAndCoolAll(t *testing.T) {
	ev := newEvents()
	d := New(ev.config(1, 4))
	for _, k := range []string{"a", "b", "c"} {
		d.Observe(k, 1, t0)
	}
	d.Forget("a")
	d.Forget("unknown")
	if ev.cooled["a"] != 1 || d.Len() != 2 {
		t.Fatalf("after Forget: a cooled %d times, %d keys tracked; want 1, 2", ev.cooled["a"], d.Len())
	}
	d.CoolAll()
	if ev.cooled["b"] != 1 || ev.cooled["c"] != 1 || d.Len() != 0 {
		t.Fatalf("after CoolAll: cooled %v, %d keys tracked", ev.cooled, d.Len())
	}
}

// A table holds at most max detectors; a new rule beyond them drops them
// all, cooling their keys.
func TestTableBounded(t *testing.T) {
	ev := newEvents()
	tab := NewTable(2, func(rule string) Config[string] { return ev.config(1, 4) })
	for _, rule := range []string{"r0", "r1", "r2"} {
		d := tab.Get(rule)
		if tab.Get(rule) != d {
			t.Fatal("Get made a second detector for a rule")
		}
		d.Observe("key of "+rule, 1, t0)
	}
	if rules, keys := tab.Len(); rules != 1 || keys != 1 {
		t.Fatalf("%d rules, %d keys; want 1, 1", rules, keys)
	}
	if ev.cooled["key of r0"] != 1 || ev.cooled["key of r1"] != 1 {
		t.Fatalf("cooled %v, want the keys of r0 and r1", ev.cooled)
	}
	tab.Forget("r2", "key of r2")
	tab.Forget("r9", "key of r2")
	if ev.cooled["key of r2"] != 1 {
		t.Fatalf("Forget cooled %d times, want 1", ev.cooled["key of r2"])
	}
}

// Observing and looking up allocate nothing once a key is hot.
func TestObserveAllocatesNothing(t *testing.T) {
	tab := NewTable(4, func(int) Config[string] { return newEvents().config(10, 4) })
	d := tab.Get(1)
	d.Observe("k", 10, t0)
	allocs := testing.AllocsPerRun(100, func() {
		tab.Get(1).Observe("k", 1, t0)
		d.Observe("cold", 1, t0)
		d.Lookup("k", t0)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per observation, want 0", allocs)
	}
}
