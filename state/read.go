package state

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

// The functions in this file are for any process, owner or not. They never
// take ownership and never open the Badger store of a run whose owner is alive.

// RunDir returns the directory of a run: <stateDir>/runs/<runID>.
func RunDir(stateDir, runID string) string {
	return filepath.Join(stateDir, "runs", runID)
}

// validRunID accepts only a plain file name, so that a run id typed by a user
// cannot point outside <stateDir>/runs.
func validRunID(id string) bool {
	return id != "" && len(id) <= 255 && filepath.IsLocal(id) &&
		!strings.ContainsAny(id, `/\:`+"\x00")
}

// checkRun returns a not-found error unless the run exists and is complete
// (meta.json is written last by Create), and a *DamagedError for a run that
// lost its meta.json (see missingMeta).
func checkRun(stateDir, runID string) error {
	if !validRunID(runID) {
		return &notFoundError{runID, stateDir}
	}
	_, err := os.Stat(filepath.Join(RunDir(stateDir, runID), fileMeta))
	if errors.Is(err, os.ErrNotExist) {
		return missingMeta(stateDir, runID)
	}
	if err != nil {
		return fmt.Errorf("run %q: %w", runID, err)
	}
	return nil
}

// missingMeta is the error for a run directory without meta.json. Create
// writes meta.json before the run's first event, so a directory whose
// events.jsonl holds events had one, and lost it: that run is damaged.
// Otherwise it is a run still being created, or whose creation never
// finished: not found.
func missingMeta(stateDir, runID string) error {
	dir := RunDir(stateDir, runID)
	if fi, err := os.Stat(filepath.Join(dir, fileEvents)); err == nil && fi.Size() > 0 {
		return &DamagedError{RunID: runID, Path: dir, Cause: "meta.json is missing"}
	}
	return &notFoundError{runID, stateDir}
}

// ReadMeta returns a run's metadata; the error matches ErrNotFound if there is
// no such run, and ErrDamaged if its meta.json is lost or unreadable.
func ReadMeta(stateDir, runID string) (Meta, error) {
	var m Meta
	if !validRunID(runID) {
		return m, &notFoundError{runID, stateDir}
	}
	path := filepath.Join(RunDir(stateDir, runID), fileMeta)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return m, missingMeta(stateDir, runID)
	}
	if err != nil {
		return m, fmt.Errorf("run %q: read meta.json: %w", runID, err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return Meta{}, &DamagedError{RunID: runID, Path: path, Cause: "meta.json is not valid JSON", Err: err}
	}
	return m, nil
}

// ReadPlan returns the plan as it was when the run started (or as `resume
// --plan` replaced it), from plan.snapshot. Create writes that file before the
// run is complete: a missing one is a *DamagedError.
func ReadPlan(stateDir, runID string) ([]byte, error) {
	if err := checkRun(stateDir, runID); err != nil {
		return nil, err
	}
	path := filepath.Join(RunDir(stateDir, runID), filePlan)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, &DamagedError{RunID: runID, Path: path, Cause: "plan.snapshot is missing", Err: err}
	}
	if err != nil {
		return nil, fmt.Errorf("run %q: read plan snapshot: %w", runID, err)
	}
	return b, nil
}

// List returns the metadata of every run in stateDir, newest first (see
// NewestFirst). A state dir that does not exist holds no runs. A run still
// being created, or whose meta.json cannot be read (permissions), is left out
// rather than failing the whole listing. A run that lost its meta.json or
// whose meta.json is damaged is listed with Damaged set, and with what the
// first line of its events.jsonl tells: its plan name and start time, if it
// can be read.
func List(stateDir string) ([]Meta, error) {
	ids, err := RunIDs(stateDir)
	if err != nil {
		return nil, err
	}
	metas := make([]Meta, 0, len(ids))
	for _, id := range ids {
		if m, ok := listMeta(stateDir, id); ok {
			metas = append(metas, m)
		}
	}
	slices.SortFunc(metas, NewestFirst)
	return metas, nil
}

// NewestFirst orders runs as List does: StartedAt descending, then Created
// descending, then run id descending.
func NewestFirst(a, b Meta) int {
	if c := b.StartedAt.Compare(a.StartedAt); c != 0 {
		return c
	}
	if c := cmp.Compare(b.Created, a.Created); c != 0 {
		return c
	}
	return strings.Compare(b.RunID, a.RunID)
}

// RunIDs returns the names of the run directories in stateDir, in directory
// order; some may name runs still being created (see ListEntry). A state dir
// that does not exist holds no runs.
func RunIDs(stateDir string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(stateDir, "runs"))
	if errors.Is(err, os.ErrNotExist) {
		return []string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list runs in %s: %w", stateDir, err)
	}
	ids := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.IsDir() {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}

// ListEntry reads one run the way List does, and its summary if it has a
// current one (see ReadSummary); the Meta then comes from the summary, which
// holds the fields of meta.json that List sorts by and 'faber list' shows
// (not Sets, Secrets, PlanFile or ParentStep). ok is false for a run List
// leaves out.
func ListEntry(stateDir, runID string) (m Meta, sum *Summary, ok bool) {
	if s, ok := ReadSummary(stateDir, runID); ok {
		return s.Meta(), &s, true
	}
	m, ok = listMeta(stateDir, runID)
	return m, nil, ok
}

// Runs reads the runs of one state dir for a listing: ListEntry of each,
// with every file read by its path from the runs directory, opened once,
// rather than from the file system's root or the working directory.
type Runs struct {
	stateDir string
	dir      runFiles
	ok       bool
}

// OpenRuns returns the Runs of stateDir; the caller closes it. Where the
// runs directory cannot be opened, Entry is ListEntry.
func OpenRuns(stateDir string) *Runs {
	r := &Runs{stateDir: stateDir}
	r.dir, r.ok = openRunsDir(filepath.Join(stateDir, "runs"))
	return r
}

func openRunsDir(dir string) (runFiles, bool) {
	r, err := openRunFiles(dir)
	return r, err == nil
}

// Close releases the runs directory.
func (r *Runs) Close() {
	if r.ok {
		r.dir.close()
		r.ok = false
	}
}

// Entry is ListEntry(stateDir, runID). It is safe for concurrent use.
func (r *Runs) Entry(runID string) (m Meta, sum *Summary, ok bool) {
	if !r.ok || !validRunID(runID) {
		return ListEntry(r.stateDir, runID)
	}
	if s, ok := readSummary(r.dir.in(runID), runID); ok {
		return s.Meta(), &s, true
	}
	m, ok = listMeta(r.stateDir, runID)
	return m, nil, ok
}

// StartBound returns a time no earlier than the run's StartedAt, read
// without opening a file: the modification time of its meta.json, which
// Create writes after StartedAt is taken, plus a margin for file systems
// whose clocks are coarse (2 s on FAT; a few ms where the kernel stamps
// files from a coarse clock). ok is false where there is none (no
// meta.json): nothing is known of that run's start.
func StartBound(stateDir, runID string) (t time.Time, ok bool) {
	fi, err := os.Stat(filepath.Join(RunDir(stateDir, runID), fileMeta))
	if err != nil {
		return time.Time{}, false
	}
	return fi.ModTime().Add(startSlack), true
}

// startSlack is StartBound's margin.
const startSlack = 2 * time.Second

// listMeta is what List shows of one run; ok is false for a run it leaves out.
func listMeta(stateDir, runID string) (Meta, bool) {
	m, err := ReadMeta(stateDir, runID)
	var de *DamagedError
	if errors.As(err, &de) {
		m = damagedMeta(stateDir, runID, de)
	} else if err != nil {
		return m, false
	}
	if m.RunID == "" {
		m.RunID = runID
	}
	return m, true
}

// damagedMeta is what List shows of a run whose meta.json is damaged.
func damagedMeta(stateDir, runID string, de *DamagedError) Meta {
	m := Meta{RunID: runID, Damaged: de}
	if evs, err := readMirror(RunDir(stateDir, runID), 0); err == nil && len(evs) > 0 {
		var first struct {
			Time time.Time `json:"time"`
			Plan string    `json:"plan"`
		}
		if json.Unmarshal(evs[0], &first) == nil {
			m.Plan, m.StartedAt = first.Plan, first.Time
		}
	}
	return m
}

// OwnerOf returns who owns (or last owned) the run and whether it is alive.
// A run whose owner closed it cleanly has no owner record: PID is 0.
//
// Alive is the lock test: a shared lock taken (and released at once) on a
// separate file means no owner holds the exclusive one. Shared rather than
// exclusive so that two readers testing at once do not see each other as owner.
func OwnerOf(stateDir, runID string) (Owner, error) {
	if err := checkRun(stateDir, runID); err != nil {
		return Owner{}, err
	}
	dir := RunDir(stateDir, runID)
	rec, err := readOwnerRecord(dir)
	if err != nil {
		return Owner{}, fmt.Errorf("run %q: read owner.json: %w", runID, err)
	}
	o := Owner{PID: rec.PID, StartTime: rec.StartTime, Host: rec.Host, Since: rec.Since}
	f, free, err := readerLock(dir)
	if err != nil {
		return Owner{}, fmt.Errorf("run %q: test lock: %w", runID, err)
	}
	releaseReaderLock(f, free)
	o.Alive = !free
	return o, nil
}

// readerLock opens the run's lock file read-only and tries a shared lock on
// it. free reports that it got the lock, i.e. no owner is alive; the caller
// must then releaseReaderLock soon, since an Open waits while it is held. A
// missing lock file means no one ever owned the run: free, with no file.
func readerLock(dir string) (f *os.File, free bool, err error) {
	f, err = os.Open(filepath.Join(dir, fileLock))
	if errors.Is(err, os.ErrNotExist) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	ok, err := tryLock(f, false)
	if err != nil || !ok {
		f.Close()
		return nil, false, err
	}
	return f, true, nil
}

func releaseReaderLock(f *os.File, locked bool) {
	if f == nil {
		return
	}
	if locked {
		unlock(f)
	}
	f.Close()
}

// ReadEvents returns the run's events with seq > afterSeq, oldest first, each
// one JSON object without its newline: ReadLog's events.
func ReadEvents(stateDir, runID string, afterSeq int64) ([][]byte, error) {
	l, err := ReadLog(stateDir, runID, afterSeq)
	return l.Events, err
}

// Log is what ReadLog read.
type Log struct {
	// Events are the events asked for, each one JSON object without its
	// newline, oldest first.
	Events [][]byte
	// Damaged is set when the run's store turned out damaged (see
	// DamagedError) and the events came from events.jsonl instead.
	Damaged *DamagedError
}

// ReadLog returns the run's events with seq > afterSeq.
//
// While the owner is alive they come from events.jsonl (complete lines only).
// Once it is gone they come from Badger, opened read-only while holding a
// shared lock so no new owner can open it meanwhile; if that fails — a store
// left by a crash needs a recovery only its next owner may do, Windows has
// no read-only Badger, the store is damaged — they come from events.jsonl,
// which may then lag the store by the commits whose append a crash cut off.
// A damaged store is reported in Log.Damaged, not as an error, since the
// events could still be read; a missing events.jsonl is an error matching
// ErrDamaged (Create makes it before the run is complete).
func ReadLog(stateDir, runID string, afterSeq int64) (Log, error) {
	var l Log
	if err := checkRun(stateDir, runID); err != nil {
		return l, err
	}
	if afterSeq < 0 {
		afterSeq = 0
	}
	dir := RunDir(stateDir, runID)
	f, free, err := readerLock(dir)
	if err != nil {
		return l, fmt.Errorf("run %q: test lock: %w", runID, err)
	}
	if free {
		evs, err := readStoreEvents(runID, dir, afterSeq)
		releaseReaderLock(f, true)
		if err == nil {
			l.Events = evs
			return l, nil
		}
		errors.As(err, &l.Damaged)
	}
	l.Events, err = readMirror(dir, afterSeq)
	if errors.Is(err, os.ErrNotExist) {
		return l, &DamagedError{RunID: runID, Path: filepath.Join(dir, fileEvents), Cause: "events.jsonl is missing", Err: err}
	}
	if err != nil {
		return l, fmt.Errorf("run %q: read events.jsonl: %w", runID, err)
	}
	return l, nil
}

// emptyFile reports whether name (a file of dbDir an error names) is there
// and empty.
func emptyFile(dbDir, name string) bool {
	if name == "" {
		return false
	}
	fi, err := os.Stat(filepath.Join(dbDir, name))
	return err == nil && fi.Mode().IsRegular() && fi.Size() == 0
}

// memtableFile finds a memtable (write-ahead log) file that an error names.
var memtableFile = regexp.MustCompile(`[0-9]+\.mem\b`)

// readStoreEvents reads events from a run's Badger store, opened read-only.
// The caller holds the shared lock, so no owner is writing it. The error is a
// *DamagedError if the store is missing or damaged; other failures (a store
// left by a crash, see readOnlyExpected) are not damage.
func readStoreEvents(runID, dir string, afterSeq int64) ([][]byte, error) {
	dbDir := filepath.Join(dir, dirDB)
	// Badger would create a missing store even read-only; a reader must not.
	if err := checkStore(runID, dbDir); err != nil {
		return nil, damaged(runID, dbDir, "", err)
	}
	var db *badger.DB
	err := guard(func() error {
		var err error
		db, err = badger.Open(badgerOptions(dbDir, Options{}, true, fullSizes))
		return err
	})
	if err != nil {
		for _, e := range readOnlyExpected {
			if strings.Contains(err.Error(), e.Error()) {
				return nil, err
			}
		}
		if emptyFile(dbDir, badgerFile.FindString(err.Error())) {
			// A memtable or value log a kill left empty (created, not yet
			// sized): its next owner removes it (removeEmptyLogs); a
			// reader cannot, and reads the event log instead.
			return nil, err
		}
		if memtableFile.MatchString(err.Error()) {
			// A write-ahead log (memtable) that a crash cut mid-write: only
			// its next owner, opening it read-write, replays and truncates
			// it. Not damage for a reader: the event log has the events.
			return nil, err
		}
		return nil, damaged(runID, dbDir, "", err)
	}
	defer guard(db.Close)
	var out [][]byte
	err = guard(func() error {
		return db.View(func(txn *badger.Txn) error {
			_, err := scanEvents(txn, afterSeq, func(v []byte) error {
				out = append(out, append([]byte(nil), v...))
				return nil
			})
			return err
		})
	})
	return out, damaged(runID, dbDir, "", err)
}

// NewRunID returns a new run id, "<plan-name>-<YYYYMMDDTHHMMSS>-<4 hex>", with
// the time in UTC and the plan name lower-cased and reduced to [a-z0-9._-]
// (other characters become '-'), so the id is a safe file name everywhere.
// It is unique within stateDir when returned; Create still refuses an id taken
// in the meantime.
func NewRunID(stateDir, planName string, now time.Time) string {
	prefix := sanitizePlanName(planName) + "-" + now.UTC().Format("20060102T150405") + "-"
	var id string
	for range 100 {
		var b [2]byte
		rand.Read(b[:])
		id = prefix + hex.EncodeToString(b[:])
		if _, err := os.Lstat(RunDir(stateDir, id)); errors.Is(err, os.ErrNotExist) {
			break
		}
	}
	return id
}

// maxPlanNameInID keeps run ids, and so paths under the state dir, short.
const maxPlanNameInID = 64

func sanitizePlanName(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
		if !ok {
			r = '-'
		}
		if r == '-' && dash {
			continue // collapse runs of replaced characters
		}
		dash = r == '-'
		b.WriteRune(r)
	}
	s := b.String()
	if len(s) > maxPlanNameInID {
		s = s[:maxPlanNameInID]
	}
	// No leading dot (a hidden directory) or dash (reads as a flag).
	s = strings.TrimLeft(s, ".-")
	s = strings.TrimRight(s, "-")
	if s == "" {
		s = "run"
	}
	return s
}
