package middleware_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/middleware"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/redisstore"
)

// BenchmarkCountByOutcome measures what counting by outcome costs a
// request: "plain" is a rule that counts every request; "given back" the
// same rule counting only 401, for a request answered 200, whose take is
// given back in one more store call after the handler; "counted" the
// same rule for a request answered 401, which makes no more calls than
// plain. On memstore and on a local redis-server:
//
//	REQUIRE_REDIS=1 go test -run '^$' -bench CountByOutcome -benchtime 2000x ./middleware/
func BenchmarkCountByOutcome(b *testing.B) {
	reqs := make([]*http.Request, 1000)
	for i := range reqs {
		reqs[i] = httptest.NewRequest(http.MethodPost, "/login", nil)
		reqs[i].Header.Set("X-User", "user-"+strconv.Itoa(i))
	}
	limit := sluice.PerSecond(1_000_000).WithBurst(1 << 30)
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	denied := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusUnauthorized) })
	srv := redistest.Start(b)
	stores := []struct {
		name  string
		store func(b *testing.B) sluice.Store
	}{
		{"memstore", func(b *testing.B) sluice.Store {
			s := memstore.New(memstore.Config{})
			b.Cleanup(func() { s.Close(context.Background()) })
			return s
		}},
		{"redis", func(b *testing.B) sluice.Store {
			s, err := redisstore.New(singleClientB(b, srv.Addr), redisstore.Config{Logger: quietLogger(), PresenceInterval: -1})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close(context.Background()) })
			return s
		}},
	}
	cases := []struct {
		name  string
		count *rules.Count
		next  http.Handler
	}{
		{"plain", nil, ok},
		{"given back", &rules.Count{Status: []int{401}}, ok},
		{"counted", &rules.Count{Status: []int{401}}, denied},
	}
	for _, sc := range stores {
		for _, bc := range cases {
			b.Run(sc.name+"/"+bc.name, func(b *testing.B) {
				set := rules.MustNew(rules.Rule{Name: "logins", Key: keyfunc.Header("X-User"), Limit: limit, Count: bc.count})
				h := middleware.Limit(sc.store(b), set, decide.WithBudget(5*time.Second), decide.WithLogger(quietLogger()))(bc.next)
				w := &headerSink{h: http.Header{}}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					clear(w.h)
					h.ServeHTTP(w, reqs[i%len(reqs)])
					i++
				}
			})
		}
	}
}
