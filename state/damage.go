package state

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/ristretto/v2/z"
)

// ErrDamaged is matched (errors.Is) by *DamagedError.
var ErrDamaged = errors.New("store damaged")

// DamagedError is returned for a run whose store, or a file faber keeps
// beside it (meta.json, events.jsonl), no longer holds what faber wrote: bytes
// changed on disk, a file or the whole store deleted, Badger refusing what it
// reads or panicking on it. Package state turns such panics into this error,
// so that none reaches the caller.
//
// A refusal by the system — no space left, permission denied, an I/O error —
// is not damage (the store may be intact) and is returned as it is.
type DamagedError struct {
	RunID string
	Path  string // the damaged file or directory
	Cause string // a short phrase: "table 000001.sst is corrupt"
	Err   error  // what Badger or the OS said, in full; may be nil
}

// Error names the run, the cause and where, in one line.
func (e *DamagedError) Error() string {
	return fmt.Sprintf("run %s: store damaged (%s) in %s", e.RunID, e.Cause, e.Path)
}

// Is makes errors.Is(err, ErrDamaged) true for a *DamagedError.
func (e *DamagedError) Is(target error) bool { return target == ErrDamaged }

// Unwrap returns the underlying error, for the debug log.
func (e *DamagedError) Unwrap() error { return e.Err }

// panicError is a panic recovered by guard.
type panicError struct{ v any }

func (p panicError) Error() string { return fmt.Sprintf("panic: %v", p.v) }

// guard runs f and turns a panic in it into an error. Badger panics on some
// corrupt data (a table footer pointing outside the file, a block whose
// entry index is garbage) instead of returning an error; every call into
// Badger that reads what is on disk goes through guard. A panic in one of
// Badger's own goroutines cannot be recovered: checkTables reads every table
// first, in the caller's goroutine, so that Badger finds none to panic on.
func guard(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = panicError{p}
		}
	}()
	return f()
}

// systemErrors are the texts of the OS errors that say the system refused,
// not that the data is bad. Badger flattens the errors it wraps into text, so
// errors.Is cannot find them and the text is searched instead.
var systemErrors = []string{
	"no space left on device",
	"disk quota exceeded",
	"not enough space on the disk",
	"permission denied",
	"access is denied",
	"operation not permitted",
	"read-only file system",
	"too many open files",
	"cannot allocate memory",
	"input/output error",
}

// isSystemErr reports whether err is the system refusing rather than bad
// content.
func isSystemErr(err error) bool {
	var pe panicError
	if errors.As(err, &pe) {
		return false
	}
	msg := strings.ToLower(err.Error())
	for _, s := range systemErrors {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// readOnlyExpected are Badger's refusals of a read-only open that do not mean
// damage: a store left by a crash needs its write-ahead log truncated, which
// only its next owner may do; Windows has no read-only mode; a memtable file
// left empty by a kill during an open.
var readOnlyExpected = []error{badger.ErrTruncateNeeded, badger.ErrWindowsNotSupported, z.NewFile}

// damaged returns err as a *DamagedError of run runID at path unless it is
// nil, already one, or the system refusing; cause "" is derived from err.
func damaged(runID, path, cause string, err error) error {
	if err == nil || errors.Is(err, ErrDamaged) || isSystemErr(err) {
		return err
	}
	if cause == "" {
		cause = causeOf(err)
	}
	return &DamagedError{RunID: runID, Path: path, Cause: cause, Err: err}
}

// badgerFile finds the first of Badger's numbered files that an error names:
// the one it was opening when it failed.
var badgerFile = regexp.MustCompile(`[0-9]+\.(?:sst|vlog|mem)\b`)

// causeOf names, in a few words, what Badger found wrong.
func causeOf(err error) string {
	msg := err.Error()
	lower := strings.ToLower(msg)
	var pe panicError
	switch {
	case badgerFile.MatchString(msg):
		return badgerFile.FindString(msg) + " is corrupt"
	case strings.Contains(lower, "manifest"):
		return "MANIFEST is corrupt"
	case strings.Contains(lower, "key registry") || strings.Contains(lower, "encryption key") || strings.Contains(lower, "datakey"):
		return "KEYREGISTRY is corrupt"
	case errors.As(err, &pe):
		return "Badger failed reading it"
	}
	return "Badger cannot read it"
}

// checkTables reads every table the store's MANIFEST lists, in full and with
// its checksums, in the calling goroutine and under guard. Badger opens the
// tables in goroutines of its own, where a corrupt one makes it panic beyond
// any recover, and later compacts them in the background; checked first, a
// corrupt table is an error here instead. A table missing from the directory
// is left to Badger, which names it.
func checkTables(dbDir string) error {
	mf, err := readManifest(dbDir)
	if err != nil {
		return err
	}
	ids := make([]uint64, 0, len(mf.Tables))
	for id := range mf.Tables {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		name := table.NewFilename(id, dbDir)
		if _, err := os.Stat(name); err != nil {
			continue
		}
		if err := checkTable(name, mf.Tables[id].Compression); err != nil {
			return &DamagedError{Path: name, Cause: "table " + filepath.Base(name) + " is corrupt", Err: err}
		}
	}
	return nil
}

// readManifest reads the store's MANIFEST (the tables of each level, each
// with its compression), under guard.
func readManifest(dbDir string) (badger.Manifest, error) {
	f, err := os.Open(filepath.Join(dbDir, "MANIFEST"))
	if err != nil {
		return badger.Manifest{}, err
	}
	defer f.Close()
	var mf badger.Manifest
	err = guard(func() error {
		var err error
		mf, _, err = badger.ReplayManifestFile(f, 0, badger.DefaultOptions(dbDir).WithLogger(nil))
		return err
	})
	if err != nil {
		return badger.Manifest{}, fmt.Errorf("manifest: %w", err)
	}
	return mf, nil
}

// checkTable opens one table read-only and verifies every block's checksum.
func checkTable(name string, c options.CompressionType) error {
	if _, ok := table.ParseFileID(filepath.Base(name)); !ok {
		return fmt.Errorf("%s: not a table file name", name)
	}
	mf, err := z.OpenMmapFile(name, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	// Without verification OpenTable closes mf only where it cannot get
	// (a failing Stat of an open file, a bad file name, checked above): on
	// any error here mf is still ours to close, and closed once.
	var t *table.Table
	err = guard(func() error {
		var err error
		t, err = table.OpenTable(mf, table.Options{
			ReadOnly:    true,
			BlockSize:   badger.DefaultOptions("").BlockSize,
			Compression: c,
			ChkMode:     options.NoVerification,
		})
		if err != nil {
			return err
		}
		return t.VerifyChecksum()
	})
	mf.Close(-1) // Close, never the table's DecrRef: that deletes the file
	return err
}

// withRun fills in the run of a DamagedError made without one.
func withRun(err error, runID string) error {
	var de *DamagedError
	if errors.As(err, &de) && de.RunID == "" {
		de.RunID = runID
	}
	return err
}

// dirNames returns the names of the files in dir (none if it cannot be read).
func dirNames(dir string) map[string]bool {
	names := map[string]bool{}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		names[e.Name()] = true
	}
	return names
}

// removeNew removes the files of dir that are not in before: what a failed
// open created (an empty memtable, a new value log). Left in
// place, a preallocated empty memtable would make every later read-only open
// ask for a truncation, and readers would no longer see the damage.
func removeNew(dir string, before map[string]bool) {
	for name := range dirNames(dir) {
		if !before[name] {
			os.Remove(filepath.Join(dir, name))
		}
	}
}

// logDamage writes the full cause of a damage to the debug log.
func logDamage(w io.Writer, err error) {
	var de *DamagedError
	if w != nil && errors.As(err, &de) && de.Err != nil {
		fmt.Fprintf(w, "state: run %s: %v\n", de.RunID, de.Err)
	}
}
