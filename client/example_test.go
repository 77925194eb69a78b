package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/client"
)

// A server refuses the first request with Retry-After: 2; the transport
// waits two seconds and sends it again. (The clock here is a fake one
// whose sleeps only move it; leave WithTime out in production.)
func ExampleNew() {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "2")
			w.Header().Set("RateLimit", `"api";r=0;t=2`)
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.Header().Set("RateLimit", `"api";r=9;t=1`)
		fmt.Fprintln(w, "ok")
	}))
	defer srv.Close()

	now := time.Unix(1_700_000_000, 0)
	t, err := client.New(nil,
		client.WithJitter(0),
		client.WithTime(func() time.Time { return now }, func(_ context.Context, d time.Duration) error {
			fmt.Println("waiting", d)
			now = now.Add(d)
			return nil
		}))
	if err != nil {
		panic(err)
	}
	resp, err := (&http.Client{Transport: t}).Get(srv.URL)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, "after", calls.Load(), "requests")
	// Output:
	// waiting 2s
	// 200 after 2 requests
}

// ParseQuota reads whichever rate-limit fields a response carries.
func ExampleParseQuota() {
	h := http.Header{}
	h.Set("RateLimit-Policy", `"per-ip";q=100;w=60`)
	h.Set("RateLimit", `"per-ip";r=42;t=35`)
	q, ok := client.ParseQuota(h, time.Now())
	fmt.Printf("%v %+v\n", ok, q)
	// Output:
	// true {Policy:per-ip Remaining:42 Reset:35s Limit:100 Window:1m0s}
}
