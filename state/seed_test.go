package state

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	badger "github.com/dgraph-io/badger/v4"
)

// TestSeedStore holds seedStore to what Badger itself writes when it
// creates a store: the same MANIFEST, a KEYREGISTRY of the same shape, and
// a seeded store that Badger opens, writes and reopens as its own.
func TestSeedStore(t *testing.T) {
	own := filepath.Join(t.TempDir(), "db")
	db, err := badger.Open(badgerOptions(own, Options{}, false, firstSizes))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	seeded := filepath.Join(t.TempDir(), "db")
	if err := seedStore(seeded); err != nil {
		t.Fatal(err)
	}
	read := func(dir, name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if a, b := read(own, "MANIFEST"), read(seeded, "MANIFEST"); !bytes.Equal(a, b) {
		t.Errorf("seeded MANIFEST %q, Badger writes %q", b, a)
	}
	a, b := read(own, "KEYREGISTRY"), read(seeded, "KEYREGISTRY")
	if len(a) != len(b) || !bytes.Equal(a[16:], b[16:]) {
		t.Errorf("seeded KEYREGISTRY %q, Badger writes %q (after a random IV of 16 bytes)", b, a)
	}
	if a, b := read(own, badgerDiscard), read(seeded, badgerDiscard); len(a) != len(b) || len(b) != badgerDiscardSize || bytes.Count(b, []byte{0}) != len(b) {
		t.Errorf("seeded DISCARD of %d bytes (zeros: %v), Badger writes %d", len(b), bytes.Count(b, []byte{0}) == len(b), len(a))
	}
	for _, name := range []string{"MANIFEST", "KEYREGISTRY", badgerDiscard} {
		if fi, err := os.Stat(filepath.Join(seeded, name)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v; want 0600", name, err, fi.Mode().Perm())
		}
	}

	for i := 0; i < 2; i++ {
		db, err := badger.Open(badgerOptions(seeded, Options{}, false, firstSizes))
		if err != nil {
			t.Fatalf("opening #%d of the seeded store: %v", i+1, err)
		}
		if i == 0 {
			err = db.Update(func(txn *badger.Txn) error { return txn.Set([]byte("k"), []byte("v")) })
		} else {
			err = db.View(func(txn *badger.Txn) error {
				it, err := txn.Get([]byte("k"))
				if err != nil {
					return err
				}
				v, err := it.ValueCopy(nil)
				if err == nil && string(v) != "v" {
					t.Errorf("read back %q, want v", v)
				}
				return err
			})
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
