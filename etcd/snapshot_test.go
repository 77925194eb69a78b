package etcd_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/etcd"
	"github.com/sluicehq/sluice/etcd/internal/etcdtest"
)

// TestSnapshotReplacedOnEachChange: each good change replaces the
// snapshot by a rename: a reader that opened the old one reads it whole,
// the new one holds the new document, mode 0600, and no temporary file is
// left behind. A refused change leaves the snapshot as it is.
func TestSnapshotReplacedOnEachChange(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.snapshot")
	srv.Put(key, doc("1"))
	s := mustStart(t, srv.Client(), etcd.WithSnapshot(path))
	for i, r := range []string{"2", "3", "4"} {
		prev := []string{"1", "2", "3"}[i]
		old, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		oldInfo, _ := old.Stat()
		srv.Put(key, doc(r))
		s.reloadTo(t, int64(r[0]-'0'), 10*time.Second)
		b := make([]byte, 1000)
		n, _ := old.ReadAt(b, 0)
		old.Close()
		if string(b[:n]) != doc(prev) {
			t.Errorf("rate %s: the snapshot opened before the change reads %q: it was written in place", r, b[:n])
		}
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if os.SameFile(info, oldInfo) {
			t.Errorf("rate %s: the snapshot is the same file as before the change", r)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("rate %s: the snapshot's mode is %v, want 0600", r, info.Mode().Perm())
		}
		if got, _ := os.ReadFile(path); string(got) != doc(r) {
			t.Errorf("rate %s: the snapshot holds %q", r, got)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Errorf("rate %s: the directory holds %d files, want only the snapshot", r, len(entries))
		}
	}
	before, _ := os.Stat(path)
	srv.Put(key, bad)
	<-s.errs
	after, _ := os.Stat(path)
	if got, _ := os.ReadFile(path); string(got) != doc("4") || !os.SameFile(before, after) {
		t.Errorf("a refused change touched the snapshot: %q", got)
	}
	if n := snapshotErrors(t, s.reg, "write"); n != 0 {
		t.Errorf("%v snapshot write errors", n)
	}
}

// TestSnapshotWriteFails: a snapshot that cannot be written is logged and
// counted, the change applies all the same, and the snapshot is written
// once it can be: at the next change, or when the same document comes
// again.
func TestSnapshotWriteFails(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	dir := filepath.Join(t.TempDir(), "snapshots")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "rules.snapshot")
	srv.Put(key, doc("1"))
	s := mustStart(t, srv.Client(), etcd.WithSnapshot(path))
	if err := os.RemoveAll(dir); err != nil { // the disk goes away (a root test cannot drop permissions)
		t.Fatal(err)
	}
	srv.Put(key, doc("2"))
	s.reloadTo(t, 2, 10*time.Second)
	s.origin(t, etcd.OriginEtcd, 2)
	if n := snapshotErrors(t, s.reg, "write"); n != 1 {
		t.Errorf("%v snapshot write errors, want 1", n)
	}
	logs := s.logs.String()
	if !strings.Contains(logs, `level=ERROR msg="sluice: the snapshot of the rules in force was not written"`) || !strings.Contains(logs, "no such file or directory") {
		t.Errorf("the failed write is not logged:\n%s", logs)
	}

	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	srv.Put(key, doc("2")) // the same document: written now
	deadline := time.Now().Add(10 * time.Second)
	for {
		if got, _ := os.ReadFile(path); string(got) == doc("2") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the snapshot was not written when the same document came again")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := s.w.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := snapshotErrors(t, s.reg, "write"); n != 2 {
		t.Errorf("%v snapshot write errors after Reload, want 2", n)
	}
}
