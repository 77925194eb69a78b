package etcd_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/etcd"
	"github.com/sluicehq/sluice/etcd/internal/etcdtest"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/rules/rulefile"
)

// TestCompactedRevisionsResync: a watch that would resume from revisions
// etcd has compacted reads the key again, applies what it holds, and
// watches on from there.
func TestCompactedRevisionsResync(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	cli := srv.Client()
	srv.Put(key, doc("1"))
	reloads := make(chan *rules.Set, 8)
	var logs lockedBuffer
	w, err := etcd.WatchLater(context.Background(), cli, key, rulefile.LoadConfig{}, etcd.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
		etcd.OnReload(func(s *rules.Set) { reloads <- s }))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	srv.Put(key, doc("2"))
	rev := srv.Put(key, doc("3"))
	if _, err := cli.Compact(context.Background(), rev); err != nil {
		t.Fatal(err)
	}
	w.Start() // from the revision of its first read, now compacted
	for _, want := range []int64{3, 4} {
		if want == 4 {
			srv.Put(key, doc("4"))
		}
		select {
		case s := <-reloads:
			if got := s.Rules()[0].Limit.Rate; got != want {
				t.Fatalf("reloaded rate %d, want %d", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("rate %d not applied within 10 s", want)
		}
	}
	if !strings.Contains(logs.String(), "etcd watch lost; reading the rules again") || !strings.Contains(logs.String(), "compacted") {
		t.Errorf("the watch did not go through the compaction; logs:\n%s", logs.String())
	}
}

// lockedBuffer is a bytes.Buffer safe for a logger and the test at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
