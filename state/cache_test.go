package state

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCacheFiles: entries are private files under <state-dir>/cache,
// replaced whole; a missing entry is ErrNotFound; drop and list.
func TestCacheFiles(t *testing.T) {
	dir := t.TempDir()
	if _, err := CacheGet(dir, "p", "a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get of nothing: %v", err)
	}
	if l, err := CacheList(dir); err != nil || len(l) != 0 {
		t.Fatalf("list of nothing: %v %v", l, err)
	}
	for i, v := range []string{"one", "two"} {
		if err := CachePut(dir, "p", "a", []byte(v), i%2 == 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := CachePut(dir, "p", "b", []byte("b"), true); err != nil {
		t.Fatal(err)
	}
	if b, err := CacheGet(dir, "p", "a"); err != nil || string(b) != "two" {
		t.Fatalf("get: %q %v", b, err)
	}
	fi, err := os.Stat(CacheDir(dir))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("cache dir: %v %v", fi.Mode(), err)
	}
	l, err := CacheList(dir)
	if err != nil || len(l) != 2 {
		t.Fatalf("list: %d %v", len(l), err)
	}
	for _, f := range l {
		if fi, err := os.Stat(f.Path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v", f.Path, fi.Mode(), err)
		}
	}
	if err := CacheDrop(dir, "p", "a"); err != nil {
		t.Fatal(err)
	}
	if err := CacheDrop(dir, "p", "a"); err != nil {
		t.Fatal("drop twice:", err)
	}
	if l, _ := CacheList(dir); len(l) != 1 {
		t.Fatalf("after drop: %d", len(l))
	}
}

// An entry's file is synced before it replaces the old one only when the
// run's commits are (FABER_SYNC=1): otherwise it survives what the rest of
// the run survives, a crash of faber, without a device flush per entry.
func TestCachePutSyncsOnlyWhenAsked(t *testing.T) {
	dir := t.TempDir()
	var synced []string
	old := syncEntry
	syncEntry = func(f *os.File) error {
		synced = append(synced, filepath.Base(f.Name()))
		return f.Sync()
	}
	defer func() { syncEntry = old }()
	if err := CachePut(dir, "p", "a", []byte("one"), false); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 0 {
		t.Fatalf("synced %v without sync", synced)
	}
	if err := CachePut(dir, "p", "a", []byte("two"), true); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 1 || !strings.HasPrefix(synced[0], cacheTempPrefix) {
		t.Fatalf("synced %v, want the temporary file once", synced)
	}
	if b, err := CacheGet(dir, "p", "a"); err != nil || string(b) != "two" {
		t.Fatalf("get: %q %v", b, err)
	}
}
