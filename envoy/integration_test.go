package envoy_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/envoy"
)

// upstreamIntegration loads envoyproxy/ratelimit's integration-test files
// (basic.yaml and another.yaml) from the corpus, each read with
// defaults: {algorithm: fixed_window}, upstream's only algorithm.
func upstreamIntegration(t *testing.T) *envoy.Mapping {
	t.Helper()
	dir := filepath.Join(peerCorpus(t), "test", "integration", "runtime", "current", "ratelimit", "config")
	tmp := t.TempDir()
	var paths []string
	for _, name := range []string{"basic.yaml", "another.yaml"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, tempFile(t, tmp, name, string(data)+"\ndefaults: {algorithm: fixed_window}\n"))
	}
	m, err := envoy.LoadMapping(paths)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// clearOfWindowEnd waits, if a fixed window of a minute (or an hour) ends
// within the next 3 s, until it has: the sequences count in windows on the
// Redis server's clock, which the test cannot step.
func clearOfWindowEnd() {
	if left := time.Until(time.Now().Truncate(time.Minute).Add(time.Minute)); left < 3*time.Second {
		time.Sleep(left + 100*time.Millisecond)
	}
}

// TestUpstreamIntegration runs envoyproxy/ratelimit's integration
// sequences, on memory and on Redis: each descriptor's status and
// remaining as upstream reports them with STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT
// (a refused request consumes nothing). On Redis the answers after key3's
// refusal come from the refusal memory: key2 still reports the 10 it has
// left, from what the store last said of it, without a store call.
func TestUpstreamIntegration(t *testing.T) {
	m := upstreamIntegration(t)
	stores := map[string]func(testing.TB) sluice.Store{
		"memstore": func(tb testing.TB) sluice.Store { return memStore(tb) },
		"redis":    func(tb testing.TB) sluice.Store { return redisStore(tb) },
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			svc, err := envoy.New(open(t), m)
			if err != nil {
				t.Fatal(err)
			}
			c := serve(t, svc)
			clearOfWindowEnd()
			run := fmt.Sprint(time.Now().UnixNano())

			// basic: key1 at 50 a second.
			if resp := call(t, c, request("basic", desc("key1", "foo"+run))); resp.OverallCode != ok || resp.Statuses[0].LimitRemaining != 49 {
				t.Errorf("basic key1: %v remaining %d, want OK 49", codesOf(resp), resp.Statuses[0].LimitRemaining)
			}

			// another: key2 at 20 a minute, 25 requests.
			for i := range 25 {
				resp := call(t, c, request("another", desc("key2", "a"+run)))
				want, left := ok, uint32(max(19-i, 0))
				if i >= 20 {
					want = over
				}
				if resp.OverallCode != want || resp.Statuses[0].Code != want || resp.Statuses[0].LimitRemaining != left {
					t.Errorf("key2 request %d: %v remaining %d, want %v %d", i+1, codesOf(resp), resp.Statuses[0].LimitRemaining, want, left)
				}
			}

			// key2 (20 a minute) and key3 (10 an hour) in one request, 15
			// requests: from the 11th, key3 refuses and key2, not
			// consumed, keeps 10.
			for i := range 15 {
				resp := call(t, c, request("another", desc("key2", "b"+run), desc("key3", "b"+run)))
				overall, key3 := ok, ok
				key2Left, key3Left := uint32(19-min(i, 9)), uint32(max(9-i, 0))
				if i >= 10 {
					overall, key3 = over, over
				}
				k2, k3 := resp.Statuses[0], resp.Statuses[1]
				if resp.OverallCode != overall || k2.Code != ok || k3.Code != key3 || k2.LimitRemaining != key2Left || k3.LimitRemaining != key3Left {
					t.Errorf("key2+key3 request %d: %v remaining %d and %d, want [%v OK %v] %d and %d",
						i+1, codesOf(resp), k2.LimitRemaining, k3.LimitRemaining, overall, key3, key2Left, key3Left)
				}
				if i >= 10 && (k2.DurationUntilReset == nil || k2.DurationUntilReset.AsDuration() <= 0 || k2.DurationUntilReset.AsDuration() > time.Minute) {
					t.Errorf("key2+key3 request %d: key2's reset %v, want within the minute", i+1, k2.DurationUntilReset)
				}
			}

			// one_per_minute: the second is refused.
			for i, want := range []rlsv3.RateLimitResponse_Code{ok, over} {
				if resp := call(t, c, request("basic", desc("one_per_minute", "c"+run))); resp.OverallCode != want {
					t.Errorf("one_per_minute request %d: %v, want %v", i+1, codesOf(resp), want)
				}
			}
		})
	}
}
