package state

import (
	"errors"
	"os"
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
	for _, v := range []string{"one", "two"} {
		if err := CachePut(dir, "p", "a", []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := CachePut(dir, "p", "b", []byte("b")); err != nil {
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
