package state

import (
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	badger "github.com/dgraph-io/badger/v4"
	"golang.org/x/sys/unix"
)

// TestSeededDiscardIsNotReadAround: Badger opens the seeded DISCARD as an
// existing file whose first page is in the page cache, so its first read
// does not make the kernel read around it (on a disk with read-ahead, a new
// sparse file's first touch brought in up to the whole MiB). On tmpfs, with
// no read-ahead, the check holds either way.
func TestSeededDiscardIsNotReadAround(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	if err := seedStore(dir); err != nil {
		t.Fatal(err)
	}
	db, err := badger.Open(badgerOptions(dir, Options{}, false, tinySizes))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if n := residentPages(t, filepath.Join(dir, badgerDiscard)); n > 1 {
		t.Errorf("after opening, %d pages of DISCARD are in the page cache, want the one seedStore wrote", n)
	}
}

// residentPages counts the pages of the file at path in the page cache.
func residentPages(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	page := os.Getpagesize()
	vec := make([]byte, (len(m)+page-1)/page)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(e)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}
