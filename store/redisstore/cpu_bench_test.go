package redisstore

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
)

// cpuVariant is one way of deciding checks whose Redis CPU the benchmark
// measures: an algorithm, alone (one request of one hit per script call) or
// coalesced (batch requests of one hit each per call).
type cpuVariant struct {
	name  string
	alg   sluice.Algorithm
	limit sluice.Limit
	batch int // requests per script call
	rules int // hits per request: 0 means 1
}

// BenchmarkScriptCPU measures the Redis server's CPU per check (INFO
// commandstats: the usec of evalsha over the checks decided) for every
// algorithm, alone and coalesced in batches of 16, and for requests of
// four token-bucket rules (a check is one rule's), on a redis-server of
// its own. Each round runs a block of checks of every variant in turn, so
// the variants share the machine's noise; "token bucket again" repeats the
// first variant as an A/A control. It reports the median over the rounds
// of usec/check per variant and of the ratios taken within each round:
// each algorithm alone over the token bucket alone, and coalesced over
// alone; "floor" is a script that only reads and writes its key. Run it
// short:
//
//	REQUIRE_REDIS=1 go test -run '^$' -bench ScriptCPU -benchtime 20x ./store/redisstore/
func BenchmarkScriptCPU(b *testing.B) {
	srv := redistest.Start(b)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, ContextTimeoutEnabled: true})
	b.Cleanup(func() { client.Close() })
	s, err := New(client, Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), StartupCheckTimeout: -1, Breaker: BreakerConfig{Disabled: true}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close(context.Background()) })
	ctx := context.Background()
	limit := sluice.Per(100_000, time.Second) // never reached: every check consumes
	var variants []cpuVariant
	for _, batch := range []int{1, 16} {
		for _, alg := range []sluice.Algorithm{sluice.TokenBucket, sluice.SlidingWindow, sluice.FixedWindow, sluice.SlidingLog} {
			name := alg.String()
			if batch > 1 {
				name += " coalesced"
			}
			variants = append(variants, cpuVariant{name: name, alg: alg, limit: limit, batch: batch})
		}
	}
	tbName := sluice.TokenBucket.String()
	variants = append(variants, cpuVariant{name: tbName + " again", alg: sluice.TokenBucket, limit: limit, batch: 1},
		cpuVariant{name: tbName + " 4 rules", alg: sluice.TokenBucket, limit: limit, batch: 1, rules: 4},
		cpuVariant{name: "floor", batch: 1})
	floor := redis.NewScript(floorScript)

	const block, keys = 128, 2048 // checks per variant per round; keys per variant
	var rounds [][]float64        // per round, usec per check of each variant
	hits := make([]sluice.Hit, block)
	outs := make([]sluice.Result, block)
	seq := 0
	round := func() {
		usec := make([]float64, len(variants))
		for v, vt := range variants {
			for i := range hits {
				seq++
				hits[i] = sluice.Hit{Key: fmt.Sprintf("%s/%d", vt.name, seq%keys), Limit: vt.limit, Algorithm: vt.alg, Cost: 1}
			}
			before := evalshaUsec(b, client)
			if vt.name == "floor" {
				for i := range hits {
					if err := floor.Run(ctx, client, []string{hits[i].Key}, seq).Err(); err != nil {
						b.Fatal(err)
					}
				}
				usec[v] = (evalshaUsec(b, client) - before) / block
				continue
			}
			rules := max(vt.rules, 1)
			for from := 0; from < block; from += vt.batch * rules {
				reqs := make([]*request, vt.batch)
				for j := range reqs {
					at := from + j*rules
					r := scriptsOf(s).newRequest(hits[at:at+rules], outs[at:at+rules])
					reqs[j] = &r
				}
				if err := scriptsOf(s).decide(ctx, reqs); err != nil {
					b.Fatal(err)
				}
				for j := from; j < from+vt.batch*rules; j++ {
					if !outs[j].Allowed {
						b.Fatalf("%s: a check was refused: %+v", vt.name, outs[j])
					}
				}
			}
			usec[v] = (evalshaUsec(b, client) - before) / block
		}
		rounds = append(rounds, usec)
	}
	round() // loads the script, creates the keys
	rounds = nil
	b.ReportAllocs()
	for b.Loop() {
		round()
	}
	// Medians over the rounds, of each variant's cost and of each ratio
	// taken within a round: a round that another process slowed down moves
	// neither.
	index := make(map[string]int, len(variants))
	for v, vt := range variants {
		index[vt.name] = v
		b.ReportMetric(median(rounds, func(r []float64) float64 { return r[v] }), "usec/check:"+strings.ReplaceAll(vt.name, " ", "_"))
	}
	ratio := func(num, den, unit string) {
		n, d := index[num], index[den]
		b.ReportMetric(median(rounds, func(r []float64) float64 { return r[n] / r[d] }), unit)
	}
	ratio(tbName+" again", tbName, "A/A:token_bucket_again/token_bucket")
	ratio(tbName, "floor", "ratio:token_bucket/floor")
	ratio(tbName+" 4 rules", tbName, "ratio:token_bucket_4_rules/token_bucket")
	for _, alg := range []sluice.Algorithm{sluice.SlidingWindow, sluice.FixedWindow, sluice.SlidingLog} {
		ratio(alg.String(), tbName, "ratio:"+strings.ReplaceAll(alg.String(), " ", "_")+"/token_bucket")
	}
	for _, alg := range []sluice.Algorithm{sluice.TokenBucket, sluice.SlidingWindow, sluice.FixedWindow, sluice.SlidingLog} {
		name := strings.ReplaceAll(alg.String(), " ", "_")
		ratio(alg.String()+" coalesced", alg.String(), "ratio:"+name+"_coalesced/alone")
	}
}

// median returns the median of f over rounds.
func median(rounds [][]float64, f func([]float64) float64) float64 {
	vs := make([]float64, len(rounds))
	for i, r := range rounds {
		vs[i] = f(r)
	}
	slices.Sort(vs)
	if len(vs) == 0 {
		return 0
	}
	return vs[len(vs)/2]
}

// floorScript is the least a script deciding a check does: read a key,
// write it with a TTL.
const floorScript = `local v = redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], ARGV[1], 'PX', 1000)
return 1`

// evalshaUsec returns the microseconds the server has spent in EVALSHA.
func evalshaUsec(b *testing.B, c *redis.Client) float64 {
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	us, err := commandUsec(info, "evalsha")
	if err != nil {
		b.Fatal(err)
	}
	return us
}

// commandUsec reads the total usec of command from an INFO commandstats
// reply: 0 for a command never called.
func commandUsec(info, command string) (float64, error) {
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "cmdstat_"+command+":")
		if !ok {
			continue
		}
		for f := range strings.SplitSeq(rest, ",") {
			if v, ok := strings.CutPrefix(f, "usec="); ok {
				return strconv.ParseFloat(v, 64)
			}
		}
		return 0, fmt.Errorf("no usec in %q", rest)
	}
	return 0, nil
}
