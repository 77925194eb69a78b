package etcd

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/rules/rulefile"
)

// checkSnapshotPath refuses a snapshot path that can never be written: a
// directory, or one in a directory that does not exist.
func checkSnapshotPath(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return invalidConfig("WithSnapshot: " + path + " is a directory")
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	if err != nil {
		return invalidConfig("WithSnapshot: the directory of " + path + ": " + errText(err))
	}
	if !fi.IsDir() {
		return invalidConfig("WithSnapshot: the directory of " + path + ": " + dir + " is not a directory")
	}
	return nil
}

// errText is err's message without the path an *fs.PathError repeats.
func errText(err error) string {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Op + ": " + pe.Err.Error()
	}
	return err.Error()
}

// writeSnapshot replaces the file at path with data: written under a
// temporary name in its directory, synced, then renamed over path, so
// that a reader sees the old content or the new, whole.
func writeSnapshot(path string, data []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// snapshot is a snapshot read at start.
type snapshot struct {
	set      *rules.Set
	modified time.Time
}

// readSnapshot reads and parses the snapshot at path as a document named
// name. Errors are *rulefile.FileErrors naming path.
func readSnapshot(path, name string, load rulefile.LoadConfig) (snapshot, error) {
	fail := func(err error) (snapshot, error) {
		if pe, ok := errors.AsType[*fs.PathError](err); ok {
			err = fmt.Errorf("%s: %w", pe.Op, pe.Err)
		}
		return snapshot{}, &rulefile.FileError{File: path, Err: err}
	}
	f, err := os.Open(path)
	if err != nil {
		return fail(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	data, err := io.ReadAll(io.LimitReader(f, rulefile.MaxFileSize+1))
	if err != nil {
		return fail(err)
	}
	set, err := rulefile.Parse(name, data, load) // name selects the syntax
	if err != nil {
		if fe, ok := errors.AsType[*rulefile.FileError](err); ok {
			fe.File = path // the errors name the file they are about
		}
		return snapshot{}, err
	}
	return snapshot{set: set, modified: fi.ModTime()}, nil
}
