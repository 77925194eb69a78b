package redisstore

import (
	"context"
	"errors"
	"testing"
	"time"
)

// replyError is an error reply, as go-redis reports one.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

// TRYAGAIN is sent again a few times, never past the context's end;
// nothing else is.
func TestTryAgain(t *testing.T) {
	try := replyError("TRYAGAIN Multiple keys request during rehashing of slot")
	ctx := context.Background()
	for i := range 3 {
		if !tryAgain(ctx, try, i) {
			t.Fatalf("try %d of TRYAGAIN refused", i)
		}
	}
	if tryAgain(ctx, try, 3) {
		t.Fatal("a fourth try")
	}
	if tryAgain(ctx, errors.New("i/o timeout"), 0) || tryAgain(ctx, replyError("CLUSTERDOWN The cluster is down"), 0) {
		t.Fatal("another error sent again")
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	start := time.Now()
	if tryAgain(done, try, 0) || time.Since(start) > 5*time.Millisecond {
		t.Fatal("tried again past the context's end")
	}
}
