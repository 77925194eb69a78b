package leakcheck

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a testing.TB that keeps its errors.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, format)
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name string
		run  func(stop <-chan struct{}) // started between Check and its result
		leak bool
	}{
		{"none", func(<-chan struct{}) {}, false},
		{"finished", func(<-chan struct{}) {
			done := make(chan struct{})
			go func() { close(done) }()
			<-done
		}, false},
		{"running", func(stop <-chan struct{}) { go parkedUntil(stop) }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stop := make(chan struct{})
			defer close(stop)
			rec := &recorder{TB: t}
			verify := check(rec, 200*time.Millisecond) // a leak is reported after the wait
			tc.run(stop)
			verify()
			if got := len(rec.errors) > 0; got != tc.leak {
				t.Fatalf("reported a leak: %v, want %v (%q)", got, tc.leak, rec.errors)
			}
		})
	}
}

// parkedUntil blocks until stop is closed; its name appears in the leak
// report.
func parkedUntil(stop <-chan struct{}) { <-stop }

func TestExtraNamesTheLeak(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	before := ids(dump())
	go parkedUntil(stop)
	var leaked []string
	for range 10000 { // until the goroutine has reached its function
		if leaked = extra(dump(), before); len(leaked) > 0 && strings.Contains(leaked[0], "parkedUntil") {
			break
		}
		runtime.Gosched()
	}
	if len(leaked) != 1 || !strings.Contains(leaked[0], "parkedUntil") {
		t.Fatalf("extra = %q, want the parked goroutine", leaked)
	}
}

func TestSystemGoroutinesAreNotLeaks(t *testing.T) {
	if leaked := settle(nil, Wait); len(leaked) > 0 {
		t.Fatalf("a test with nothing running reports %q", leaked)
	}
}
