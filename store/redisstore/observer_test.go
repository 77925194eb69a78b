package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/redisstore"
)

// events is a StoreEvents that is not an Observer.
type events struct{}

func (events) BreakerChanged(string, sluice.BreakerState, sluice.BreakerState) {}
func (events) ScriptReloaded(string)                                           {}

// observingEvents is a StoreEvents that is also an Observer, as the metrics
// package's Collector is.
type observingEvents struct{ events }

func (observingEvents) Observe(context.Context, sluice.Decision) {}

func TestObserverIsTheEventsReceiver(t *testing.T) {
	both := observingEvents{}
	cases := []struct {
		name string
		ev   sluice.StoreEvents
		want sluice.Observer
	}{
		{"none", nil, nil},
		{"events_only", events{}, nil},
		{"events_and_observer", both, both},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// No I/O: the startup check is off and no call is made.
			s, err := redisstore.New(newClient(t, "127.0.0.1:1"), redisstore.Config{Events: tc.ev, StartupCheckTimeout: -time.Second, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close(context.Background())
			var src sluice.ObserverSource = s
			if got := src.Observer(); got != tc.want {
				t.Fatalf("Observer() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMustNew(t *testing.T) {
	s := redisstore.MustNew(newClient(t, "127.0.0.1:1"), redisstore.Config{StartupCheckTimeout: -time.Second, Logger: quiet})
	s.Close(context.Background())
	defer func() {
		if recover() == nil {
			t.Fatal("MustNew accepted a nil client")
		}
	}()
	redisstore.MustNew(nil, redisstore.Config{})
}
