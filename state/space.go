package state

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// A full disk is the one storage failure faber must survive without a crash.
// Badger writes its write-ahead log (and its tables) through memory-mapped
// files that it creates sparse: writing to a page that the file system can no
// longer back is not an error but a SIGBUS, which kills a Go program outright,
// whichever goroutine takes it. So the store makes sure Badger never writes a
// page it has not reserved:
//
//   - before Badger opens a store for writing, there must be room for what
//     opening writes and for the log's reservation (openReserve);
//   - right after, the first walReserve bytes of the memtable's write-ahead
//     log are allocated for real (preallocate); commits only ever write there;
//   - before the log could outgrow that reservation, the store closes and
//     reopens Badger itself (rotate), after checking there is room for the
//     table the memtable becomes, rather than letting Badger start a new,
//     sparse log in the middle of a commit;
//   - at Close, the unused part of the reservation is given back first
//     (releaseWAL), so that closing — which writes the memtable out as a
//     table and completes events.jsonl — has room; if there is still not
//     enough, the store is left as a crash would leave it (its log holds every
//     commit) and the next owner finishes the job.
//
// Where the OS cannot tell free space or allocate ahead (not Linux or macOS),
// the checks are skipped and Badger is left to its own devices.

// ErrNoSpace is matched (errors.Is) by the errors of this package that come
// from a full file system under the state dir.
var ErrNoSpace = errors.New("no space left on device")

// SpaceError is a state dir whose file system is (nearly) full.
type SpaceError struct {
	Dir   string // the state dir
	Doing string // what could not be done, e.g. "open run x"
	Need  int64  // bytes needed, when faber checked ahead; 0 when the OS refused a write
	Avail int64  // bytes available when it checked
	Err   error  // the OS error, when the OS refused a write
}

// Error says which state dir is full and what it was needed for.
func (e *SpaceError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "state dir %s: no space left on device", e.Dir)
	switch {
	case e.Need > 0:
		fmt.Fprintf(&b, " (%s needs %s free, %s are)", e.Doing, humanBytes(e.Need), humanBytes(e.Avail))
	case e.Doing != "":
		fmt.Fprintf(&b, " (%s)", e.Doing)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrNoSpace) true for a *SpaceError.
func (e *SpaceError) Is(target error) bool { return target == ErrNoSpace }

// Unwrap returns the OS error, if any.
func (e *SpaceError) Unwrap() error { return e.Err }

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// IsNoSpace reports whether err comes from a full file system (or an
// exhausted quota). Badger flattens the errors it wraps into text, so the
// message is checked too.
func IsNoSpace(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrNoSpace) {
		return true
	}
	for _, errno := range noSpaceErrnos {
		if errors.Is(err, errno) {
			return true
		}
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "no space left on device") || strings.Contains(msg, "disk quota exceeded")
}

// noSpace turns an error caused by a full file system into a *SpaceError
// naming the state dir; other errors pass unchanged.
func noSpace(stateDir, doing string, err error) error {
	var se *SpaceError
	if err == nil || errors.As(err, &se) || !IsNoSpace(err) {
		return err
	}
	return &SpaceError{Dir: stateDir, Doing: doing, Err: err}
}

// Sizes for the checks above, for an opening of Badger with sizes z (see
// storeSizes). The log's reservation is the memtable's size: rotateAt leaves
// room below it for the largest transaction Badger accepts, as counted by
// entryCost. Badger's limits are 15% of the memtable in bytes and that over
// skl.MaxNodeSize (96) in entries, and entryCost counts 124 bytes more per
// entry than Badger does: 0.15 × (1 + 124/96) ≈ 0.344 of the memtable, under
// 3/8 (3 MiB of 8: about 1.2 MiB of data in at most ~13,000 entries).
func (z storeSizes) walReserve() int64 { return z.mem }
func (z storeSizes) rotateAt() int64   { return z.mem - z.mem*3/8 }

// openReserve is what opening a store for writing needs: the log's
// reservation, Badger's discard-stats file (1 MiB, written through when
// created) and a few pages of headers and small files.
func (z storeSizes) openReserve() int64 {
	return z.walReserve() + badgerDiscardSize + 256<<10
}

const (
	// closeMargin is room for the small writes of closing: MANIFEST,
	// events.jsonl, a table's index.
	closeMargin = 256 << 10
	// LowSpace is the free space below which a run's file system counts
	// as full (see CheckSpace).
	LowSpace = 64 << 10
)

// entryCost bounds what one Badger entry of a key and value adds to the
// memtable: its skiplist node (at most 96 bytes), the key with its 8-byte
// version, the value with its header, alignment; its write-ahead log record
// (a header of at most 22 bytes, key, version, value, checksum) is smaller.
func entryCost(k, v int) int64 { return int64(k + v + 136) }

// txnCost bounds the entry that marks the end of each transaction.
const txnCost = 256

// FreeSpace returns the bytes available to this process on the file system
// that holds path, or -1 where the OS does not say.
func FreeSpace(path string) int64 { return freeSpace(path) }

// CheckSpace returns a *SpaceError if the file system holding the run
// directory has less than LowSpace bytes available: a step that wrote there
// (its log, its outputs) has found it full, and neither its log nor the next
// step's can be trusted to be whole.
func CheckSpace(stateDir, runID string) error {
	avail := freeSpace(RunDir(stateDir, runID))
	if avail < 0 || avail >= LowSpace {
		return nil
	}
	return &SpaceError{Dir: stateDir, Doing: "less than " + humanBytes(LowSpace) + " left", Avail: avail}
}

// needSpace returns a *SpaceError unless need bytes are available under dir.
func needSpace(stateDir, dir string, need int64, doing string) error {
	avail := freeSpace(dir)
	if avail < 0 || avail >= need {
		return nil
	}
	return &SpaceError{Dir: stateDir, Doing: doing, Need: need, Avail: avail}
}

// memFiles returns Badger's memtable log files in dbDir, oldest first, and
// the space they take.
func memFiles(dbDir string) (names []string, size int64) { return numberedFiles(dbDir, ".mem") }

// numberedFiles returns Badger's numbered files in dbDir whose names end in ext
// (".mem", ".vlog"), oldest first, and the space they take.
func numberedFiles(dbDir, ext string) (names []string, size int64) {
	ents, err := os.ReadDir(dbDir)
	if err != nil {
		return nil, 0
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ext) {
			continue
		}
		names = append(names, filepath.Join(dbDir, e.Name()))
		if fi, err := e.Info(); err == nil {
			size += allocated(fi)
		}
	}
	// Badger numbers them with at least five digits.
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b)) })
	return names, size
}

// errnoList is what noSpaceErrnos holds on each platform.
type errnoList = []syscall.Errno
