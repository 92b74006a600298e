// Package state keeps each run's durable record: one Badger store per run, opened
// only by the process that owns the run, plus files that other processes read
// without ever touching the store.
//
// Layout of a run (see RunDir):
//
//	<stateDir>/runs/<run-id>/
//	   db/             Badger; only the owner opens it
//	   meta.json       static run metadata, written once at creation
//	   plan.snapshot   the plan as it was at start
//	   events.jsonl    the committed event log, one JSON object per line;
//	                   line n is the event with seq n
//	   owner.json      pid, process start time and host of the current owner
//	   lock            the owner holds an exclusive lock on it while it owns the run
//	   summary.json    what list shows of the run, left by an owner that closed
//	                   it cleanly; removed by the next owner (see Summary)
//
// Badger allows one opener per directory, yet two runs may go at once in one state
// dir and list/status/events/logs must work while a run is active in another
// process. Hence a store per run, and readers that take their data from the
// published files (or from Badger, read-only, once the owner is gone).
package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

// ErrNotFound is matched (errors.Is) by the error for a run id that names no
// complete run in the state dir (no run directory, or one whose creation never
// finished); the error itself names the run and the state dir.
var ErrNotFound = errors.New("run not found")

// ErrLocked is matched (errors.Is) by *LockedError.
var ErrLocked = errors.New("run is active in another process")

// LockedError is returned when another live process owns the run. PID is the
// owner's pid as it published it, or 0 if it has not published it yet.
type LockedError struct {
	RunID string
	PID   int
}

// Error names the run and the process holding it, which is what a user needs
// to decide whether to wait or to kill it.
func (e *LockedError) Error() string {
	if e.PID <= 0 {
		return fmt.Sprintf("run %s is active in another process", e.RunID)
	}
	return fmt.Sprintf("run %s is active in process %d", e.RunID, e.PID)
}

// Is makes errors.Is(err, ErrLocked) true for a *LockedError.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// notFoundError names the missing run; it unwraps to ErrNotFound.
type notFoundError struct{ runID, stateDir string }

func (e *notFoundError) Error() string {
	return fmt.Sprintf("run %q not found in %s", e.runID, e.stateDir)
}

func (e *notFoundError) Unwrap() error { return ErrNotFound }

// Meta is the static description of a run, written once to meta.json when the
// run is created. Its JSON field names are part of faber's output contract.
type Meta struct {
	RunID     string            `json:"run_id"`
	Plan      string            `json:"plan"`       // plan name
	PlanFile  string            `json:"plan_file"`  // absolute path of the plan file
	StartedAt time.Time         `json:"started_at"` // with sub-second precision
	Created   int64             `json:"created"`    // UnixNano at creation, tie-breaker for ordering
	Sets      map[string]string `json:"sets,omitempty"`
	// Secrets are the values the run masks (its plan's secrets), so that
	// readers mask them too without parsing the plan.
	Secrets     []string `json:"secrets,omitempty"`
	ParentRunID string   `json:"parent_run_id,omitempty"`
	ParentStep  string   `json:"parent_step_id,omitempty"`
	// Part is the part of its plan the run was asked to run (faber run
	// PLAN STEP... --from STEP), nil for the whole plan: resume runs the
	// same part.
	Part *Part `json:"part,omitempty"`
	// Damaged is set by List, and only there, for a run whose meta.json is
	// lost or damaged; the fields above are then what its event log tells.
	Damaged *DamagedError `json:"-"`
}

// Part is a part of a plan: the steps named on faber run's command line
// (each with what it needs) and its --from steps (each with what follows
// it).
type Part struct {
	Steps []string `json:"steps,omitempty"`
	From  []string `json:"from,omitempty"`
}

// Event is one entry of a run's event log. Seq is assigned by the caller and
// must continue the log without gaps; JSON is one complete JSON object on one
// line, without the trailing newline.
type Event struct {
	Seq  int64
	JSON []byte
	// WellFormed says that JSON is one line of valid JSON by construction
	// (exec.Event.MarshalChecked), so that Commit does not check it again;
	// JSON from anywhere else is checked.
	WellFormed bool
}

// Change is one atomic update of a run: a new run record, new step records and
// the events that explain them. Either all of it is committed or none of it.
type Change struct {
	Run    []byte            // new run record; nil = unchanged
	Steps  map[string][]byte // step id -> new step record
	Events []Event           // must continue the seq exactly (last+1, +2, ...)
	// Outcome, when set, is the run's status after this change as its
	// events tell it; the caller sets it with every change whose events
	// change the status. The store publishes the last one in the run's
	// summary at Close. nil leaves the status as it was.
	Outcome *Outcome
}

// Snapshot is everything the owner needs to continue a run after Open.
type Snapshot struct {
	Meta    Meta
	Plan    []byte
	Run     []byte            // nil if no run record was ever committed
	Steps   map[string][]byte // step id -> latest step record
	LastSeq int64             // seq of the last committed event, 0 if none
}

// Options configures a Store.
type Options struct {
	// Sync fsyncs every commit (sync.go), so committed events survive
	// a power loss and not only a crash of faber. It is off unless the user
	// asks for it (FABER_SYNC=1): a commit survives a crash of faber either way.
	Sync bool
	// Logger receives Badger's log lines and the store's own warnings (the debug
	// log). nil discards them, which is what faber passes unless -v asks for
	// them on stderr: by default they never reach the terminal, where they
	// would land in the middle of the TUI.
	Logger io.Writer
	// Steps is how many steps a new run has once its fan-outs are
	// expanded, for Create: a run of more than fewSteps starts its store
	// at full size (sizesFor). 0 means not known.
	Steps int
}

// File names inside a run directory.
const (
	fileMeta   = "meta.json"
	filePlan   = "plan.snapshot"
	fileEvents = "events.jsonl"
	fileOwner  = "owner.json"
	fileLock   = "lock"
	dirDB      = "db"
)

// Store is a run's store, held by the process that owns the run. Its methods
// are safe for concurrent use; commits are serialised.
type Store struct {
	mu       sync.Mutex
	stateDir string
	runID    string
	dir      string
	opt      Options
	log      io.Writer
	lock     *os.File
	db       *badger.DB
	// memUsed bounds what the current memtable holds, by entryCost; the
	// store rotates the memtable before it could outgrow its reserved log
	// (see space.go).
	memUsed int64
	// sizes are those Badger is open with (see storeSizes).
	sizes storeSizes
	// wal is the memtable log open for syncing commits (sync.go), or nil.
	wal *os.File
	// broken is the error of a Badger write that failed: Badger may then be
	// unable to take another, so nothing more is written and Close leaves
	// the store as a crash would, for the next owner to recover.
	broken  error
	mirror  *os.File // events.jsonl, opened for append
	lastSeq int64
	// mirrorOK is false after a failed append; the next commit repairs the
	// mirror from Badger instead of appending after a possibly torn line.
	mirrorOK bool
	// applyPending is set when a staged commit passed its commit point but
	// moving its records into place failed; they must be moved before anything
	// else reads or writes records.
	applyPending bool
	// outcome is the run's status as the last commit that stated it (or the
	// summary found at Open) tells; nil if unknown, and then Close writes
	// no summary.
	outcome *Outcome
	// viewer keeps the run's view (see Viewer); priorView is the stamp of
	// the view file the last owner left, if it was current at Open, when
	// the store held every event up to priorSeq.
	viewer    Viewer
	priorView *FileStamp
	priorSeq  int64
	// leftOpen is set when Close left Badger as a crash would (see closeDB):
	// the store's files are not final, so no summary is written.
	leftOpen bool
	// testHook, when set by tests, is called at named points of a staged commit
	// and may return an error to stop it there, as a crash would; and before
	// each sync of a commit ("sync <log file>"), to fail it.
	testHook func(point string) error
}

// Create makes a new run directory, takes ownership of it, opens its store and
// writes the run's metadata (meta.json) and plan snapshot (in Badger and as
// plan.snapshot for readers). meta.RunID must be a plain file name, normally
// from NewRunID; a zero StartedAt or Created is filled in with the current time.
// Create fails if the run already exists. meta.json is written last: a run
// appears in List only once it is complete.
func Create(stateDir string, meta Meta, plan []byte, opt Options) (*Store, error) {
	s, err := create(stateDir, meta, plan, opt)
	return s, noSpace(stateDir, "creating run "+meta.RunID, err)
}

func create(stateDir string, meta Meta, plan []byte, opt Options) (*Store, error) {
	if !validRunID(meta.RunID) {
		return nil, fmt.Errorf("invalid run id %q: it must be a plain file name", meta.RunID)
	}
	if err := checkPlanSize(plan); err != nil {
		return nil, fmt.Errorf("run %q: %w", meta.RunID, err)
	}
	now := time.Now()
	if meta.StartedAt.IsZero() {
		meta.StartedAt = now
	}
	if meta.Created == 0 {
		meta.Created = now.UnixNano()
	}
	metaJSON, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("run %q: encode meta.json: %w", meta.RunID, err)
	}
	if err := os.MkdirAll(filepath.Join(stateDir, "runs"), 0o700); err != nil {
		return nil, fmt.Errorf("create state dir: %w", err)
	}
	dir := RunDir(stateDir, meta.RunID)
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("run %q already exists in %s", meta.RunID, stateDir)
		}
		return nil, fmt.Errorf("run %q: create run dir: %w", meta.RunID, err)
	}
	first := sizesFor(plan, opt.Steps)
	s, err := openStore(stateDir, meta.RunID, opt, &first)
	if err == nil {
		err = s.initRun(plan, metaJSON, opt.Sync)
		if err != nil {
			s.Close()
		}
	}
	if err != nil {
		// Nothing of this run can be used; leave no half-made run behind.
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// initRun writes what Create promises, meta.json last.
func (s *Store) initRun(plan, metaJSON []byte, sync bool) error {
	err := s.update(func(txn *wtxn) error {
		if err := txn.Set(keyPlan, plan); err != nil {
			return err
		}
		return txn.Set(keySeq, encodeSeq(0))
	})
	if err != nil {
		return fmt.Errorf("run %q: store plan: %w", s.runID, err)
	}
	if err := writeFileAtomic(filepath.Join(s.dir, filePlan), plan, sync); err != nil {
		return fmt.Errorf("run %q: write plan snapshot: %w", s.runID, err)
	}
	if err := writeFileAtomic(filepath.Join(s.dir, fileMeta), metaJSON, sync); err != nil {
		return fmt.Errorf("run %q: write meta.json: %w", s.runID, err)
	}
	return nil
}

// Open takes ownership of an existing run and opens its store. It returns an
// error matching ErrNotFound if there is no such run, and a *LockedError if a
// live process owns it. A store left behind by a crashed process opens fine:
// Badger replays its write-ahead log, a staged commit that reached its commit
// point is completed, and events.jsonl is repaired to match the committed log.
// A store that is missing or damaged gives a *DamagedError (never a panic, and
// never a new empty store in its place); a failed open removes the files it
// created, so that readers still see the store as it was.
func Open(stateDir, runID string, opt Options) (*Store, error) {
	if err := checkRun(stateDir, runID); err != nil {
		return nil, err
	}
	return openStore(stateDir, runID, opt, nil)
}

// openStore takes ownership of the run directory and opens everything in it.
// With first nil the store must be there already (Open), and a failure to
// read it is damage; otherwise it is made (Create), with Badger opened at
// *first.
func openStore(stateDir, runID string, opt Options, first *storeSizes) (_ *Store, err error) {
	exists := first == nil
	sizes := fullSizes
	if first != nil {
		sizes = *first
	}
	dir := RunDir(stateDir, runID)
	lock, err := acquireOwnership(dir, runID)
	if err != nil {
		return nil, err
	}
	log := opt.Logger
	if log == nil {
		log = io.Discard
	}
	s := &Store{stateDir: stateDir, runID: runID, dir: dir, opt: opt, log: log, lock: lock, sizes: sizes}
	// A dead owner's half-written files: this process holds the lock now.
	removeTemps(dir)
	defer func() {
		if err != nil {
			s.Close()
			err = noSpace(stateDir, "opening run "+runID, err)
		}
	}()
	// The summary goes before anything changes: a reader must never take
	// it for current while this owner writes. What it said is kept, for
	// the summary this owner leaves, if nothing was changed meanwhile.
	var prior *Summary
	if exists {
		if sum, ok := ReadSummary(stateDir, runID); ok {
			prior = &sum
		}
		if err := removeSummary(dir); err != nil {
			return nil, fmt.Errorf("run %q: remove %s: %w", runID, fileSummary, err)
		}
	}
	// In the index of owned runs first, so that a sweep finds the run
	// if this process dies owning it (owned.go). Without it only the
	// sweep of leftovers misses the run: say so, and go on.
	if err := markOwned(stateDir, runID); err != nil {
		s.logf("not in the index of owned runs (%v): if this faber dies, other runs will not tidy what it leaves", err)
	}
	if err := writeOwner(dir); err != nil {
		return nil, fmt.Errorf("run %q: write owner.json: %w", runID, err)
	}
	dbDir := s.dbDir()
	// fail classifies a failure to read an existing store: damage, or the
	// system refusing (see DamagedError).
	fail := func(what string, err error) error {
		if exists {
			err = damaged(runID, dbDir, "", err)
			logDamage(opt.Logger, err)
		}
		if errors.Is(err, ErrDamaged) {
			return err
		}
		return fmt.Errorf("run %q: %s: %w", runID, what, err)
	}
	if exists {
		if err := checkStore(runID, dbDir); err != nil {
			return nil, fail("open store", err)
		}
	}
	removeEmptyLogs(dbDir)
	// Opening writes through fresh sparse mappings, and the memtables a
	// crash left behind are written out as tables at once: make sure it
	// all fits before Badger starts (see space.go).
	_, replay := memFiles(dbDir)
	if err := needSpace(stateDir, dir, sizes.openReserve()+replay+tablesSize(dbDir), "opening run "+runID); err != nil {
		return nil, err
	}
	if !exists && !opt.Sync {
		if err := seedStore(dbDir); err != nil {
			return nil, fmt.Errorf("run %q: create store: %w", runID, err)
		}
	}
	before := dirNames(dbDir)
	if err := guard(s.openDB); err != nil {
		// Badger may return a half-closed DB with its error: never use it.
		if exists {
			removeNew(dbDir, before)
		}
		return nil, fail("open store", err)
	}
	if err := guard(s.finishStaged); err != nil {
		return nil, fail("recover store", err)
	}
	if err := guard(func() (err error) { s.lastSeq, err = s.readSeq(); return err }); err != nil {
		return nil, fail("read store", err)
	}
	s.mirror, err = os.OpenFile(filepath.Join(dir, fileEvents), os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("run %q: open events.jsonl: %w", runID, err)
	}
	if err := guard(s.repairMirror); err != nil {
		return nil, fail("repair events.jsonl", err)
	}
	private(dbDir)
	if opt.Sync {
		s.logf("every commit is synced to the device before it returns")
	} else {
		s.logf("commits are not synced to the device (a crash of faber loses none; a power loss may lose the last)")
	}
	if prior != nil && prior.LastSeq == s.lastSeq {
		s.outcome = &prior.Outcome
		s.priorView, s.priorSeq = prior.View, prior.LastSeq
	}
	return s, nil
}

// private makes the files Badger created in dbDir 0600, like every file of
// the state dir: Badger creates some with 0666 less the umask. (The
// directory is 0700 already, so nothing in it was readable by others.)
func private(dbDir string) {
	ents, _ := os.ReadDir(dbDir)
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o077 != 0 {
			_ = os.Chmod(filepath.Join(dbDir, e.Name()), 0o600)
		}
	}
}

// checkStore makes sure an existing run's store is there and that every table
// in it reads back whole, before Badger opens it (see checkTables).
func checkStore(runID, dbDir string) error {
	if _, err := os.Stat(dbDir); errors.Is(err, os.ErrNotExist) {
		return &DamagedError{RunID: runID, Path: dbDir, Cause: "the store is missing", Err: err}
	}
	if _, err := os.Stat(filepath.Join(dbDir, "MANIFEST")); errors.Is(err, os.ErrNotExist) {
		return &DamagedError{RunID: runID, Path: dbDir, Cause: "MANIFEST is missing", Err: err}
	}
	return withRun(checkTables(dbDir), runID)
}

func (s *Store) dbDir() string { return filepath.Join(s.dir, dirDB) }

// openDB opens Badger for writing and reserves its new memtable's log.
func (s *Store) openDB() error {
	db, err := badger.Open(badgerOptions(s.dbDir(), s.opt, false, s.sizes))
	if err != nil {
		return err
	}
	s.db = db
	s.memUsed = 0
	if names, _ := memFiles(s.dbDir()); len(names) > 0 {
		if err := preallocate(names[len(names)-1], s.sizes.walReserve()); err != nil {
			s.broken = err
			return fmt.Errorf("reserve the write-ahead log: %w", err)
		}
	}
	// Badger runs no compactions of its own (see badgerOptions): compact
	// here, where the caller checked for room, once level 0 holds more
	// than maxLevel0 tables (each open or rotation adds one).
	l0 := 0
	for _, ti := range db.Tables() {
		if ti.Level == 0 {
			l0++
		}
	}
	if l0 > maxLevel0 {
		if err := db.Flatten(1); err != nil {
			s.broken = err
			return fmt.Errorf("compact the store: %w", err)
		}
		// The compaction's table builders go back to Badger's pool of
		// allocators, each holding a table's blocks uncompressed (some
		// 3 MB), and the pool lets one go every 2 s without use: up to
		// 8, some 15–25 MB the heap kept between rotations of a 10,000-item
		// fan-out, and its pace on top of them. Closing Badger empties the
		// pool; its memtable is still empty, so the closing writes no table
		// and the opening replays nothing. Level 0 is empty now: the
		// opening does not compact again.
		s.closeWAL()
		s.db = nil
		if err := db.Close(); err != nil {
			s.broken = err
			return fmt.Errorf("compact the store: %w", err)
		}
		freeClosedDB()
		return s.openDB()
	}
	return nil
}

// maxLevel0 is how many tables level 0 may hold when Badger is opened for
// writing; one more compacts them all into one level first (openDB). A
// compaction rewrites every table, so it costs as much as all that the run
// has written: at 2 (Badger's NumLevelZeroTables), a 10,000-item cached
// fan-out, which rotates its memtable four times, compacted twice and spent
// a tenth of its time there. At 5 it compacts every fifth rotation (a run
// of some 12,000 steps) and level 0 holds at most 6 tables, the opening's
// and one rotation's or flush's more: under NumLevelZeroTablesStall (8),
// where Badger, having no compactors, would stall writes for good. A
// reader merges the tables of level 0, but reads a run's view, not its
// tables, but for Load (resume, status of a run without a view).
const maxLevel0 = 5

// rotate closes and reopens Badger, which writes the memtable out as a table
// now, while there is room for it, and starts the next one with a reserved
// log; left to itself, Badger would start a sparse log in the middle of a
// commit. Staged records stay where they are: this is not a recovery. Badger
// reopens at fullSizes (a new run's first opening may be smaller).
func (s *Store) rotate() error {
	// The memtable becomes a table, which a compaction may rewrite with
	// the others; the new log's reservation reuses the old one's space,
	// freed once the table is written.
	need := s.memUsed + tablesSize(s.dbDir()) + fullSizes.openReserve() - s.sizes.walReserve()
	if err := needSpace(s.stateDir, s.dir, need, "continuing run "+s.runID); err != nil {
		return err
	}
	// Reopening holds a descriptor per table, and a few more while it
	// opens: refuse while the store is still whole (README, "Scarce
	// resources").
	if err := spareFiles(len(s.db.Tables()) + 4); err != nil {
		return fmt.Errorf("rotate the store's memtable: %w", err)
	}
	s.logf("rotating the memtable (%d bytes counted)", s.memUsed)
	s.closeWAL()
	err := s.db.Close()
	s.db = nil
	if err == nil {
		s.sizes = fullSizes
		freeClosedDB()
		err = s.openDB()
	}
	if err != nil {
		if s.broken == nil {
			s.broken = err
		}
		return fmt.Errorf("rotate the store's memtable: %w", err)
	}
	return nil
}

// freeClosedDB collects the garbage a closed Badger left, before rotate
// opens the next: the memtable's arena (10 MiB at fullSizes, counted whole
// in the heap) and the table its flush built. Left to the pace, the
// collector saw them as live when the next opening allocated its arena,
// and the heap held both: a 10,000-item fan-out peaked at each rotation.
// One collection per rotation, some 2,400 steps apart at fullSizes.
func freeClosedDB() { runtime.GC() }

// writeTxn starts a write transaction, rotating the memtable first when the
// largest transaction could take it past its reserved log.
func (s *Store) writeTxn() (*wtxn, error) {
	if s.broken != nil {
		return nil, fmt.Errorf("the store took no more writes after an earlier failure: %w", s.broken)
	}
	if s.memUsed >= s.sizes.rotateAt() {
		if err := s.rotate(); err != nil {
			return nil, err
		}
	}
	return &wtxn{Txn: s.db.NewTransaction(true), s: s}, nil
}

// update runs fn in a write transaction and commits it, like badger.DB.Update.
func (s *Store) update(fn func(txn *wtxn) error) error {
	txn, err := s.writeTxn()
	if err != nil {
		return err
	}
	defer txn.Discard()
	if err := fn(txn); err != nil {
		return err
	}
	return txn.Commit()
}

// wtxn is a write transaction that counts what it adds to the memtable.
type wtxn struct {
	*badger.Txn
	s     *Store
	n     int64 // by entryCost
	large int64 // bytes of values that go to the value log
}

// Set adds k = v, counting it.
func (t *wtxn) Set(k, v []byte) error {
	if err := t.Txn.Set(k, v); err != nil {
		return err
	}
	t.n += entryCost(len(k), len(v))
	if len(v) >= valueThreshold {
		t.large += int64(len(v))
	}
	return nil
}

// Delete deletes k, counting the tombstone.
func (t *wtxn) Delete(k []byte) error {
	if err := t.Txn.Delete(k); err != nil {
		return err
	}
	t.n += entryCost(len(k), 0)
	return nil
}

// Commit commits. Large values are written to Badger's value log, a sparse
// mapping too: there must be room for them first. A failed commit leaves
// the store broken.
func (t *wtxn) Commit() error {
	s := t.s
	if t.large > 0 {
		if err := needSpace(s.stateDir, s.dir, t.large+closeMargin, "writing a large record of run "+s.runID); err != nil {
			return err
		}
	}
	s.memUsed += t.n + txnCost
	if err := t.Txn.Commit(); err != nil {
		s.broken = err
		return err
	}
	if err := s.syncCommit(t.large > 0); err != nil {
		// As with Badger's own SyncWrites: the commit is in the log, but
		// whether it would survive a power loss is unknown, so nothing more
		// is written after it.
		s.broken = err
		return err
	}
	return nil
}

// tablesSize is the space of Badger's tables in dbDir, which bounds what a
// compaction of them writes.
func tablesSize(dbDir string) int64 {
	ents, err := os.ReadDir(dbDir)
	if err != nil {
		return 0
	}
	var n int64
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".sst") {
			if fi, err := e.Info(); err == nil {
				n += allocated(fi)
			}
		}
	}
	return n
}

// readSeq returns the seq of the last committed event.
func (s *Store) readSeq() (int64, error) {
	var seq int64
	err := s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(keySeq)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil // a run created before its first commit
		}
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			seq, err = decodeSeq(v)
			return err
		})
	})
	return seq, err
}

// Dir returns the run directory, where other packages put logs/ and outputs/.
func (s *Store) Dir() string { return s.dir }

// Synced reports whether the store syncs every commit (FABER_SYNC=1), so
// that what is written beside it (the cache's entries) can do the same.
func (s *Store) Synced() bool { return s.opt.Sync }

// Load reads the run's metadata, plan, run record, every step record and the
// last seq. It iterates the step records in key order rather than looking them
// up one by one, so a run of 10,000 steps loads in one pass.
func (s *Store) Load() (*Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ready(); err != nil {
		return nil, err
	}
	meta, err := ReadMeta(s.stateDir, s.runID)
	if err != nil {
		return nil, err
	}
	snap := &Snapshot{Meta: meta, Steps: make(map[string][]byte), LastSeq: s.lastSeq}
	err = guard(func() error {
		return s.db.View(func(txn *badger.Txn) error {
			var err error
			if snap.Plan, err = getValue(txn, keyPlan); err != nil {
				return err
			}
			if snap.Run, err = getValue(txn, keyRun); err != nil {
				return err
			}
			it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixStep})
			defer it.Close()
			for it.Rewind(); it.Valid(); it.Next() {
				item := it.Item()
				v, err := item.ValueCopy(nil)
				if err != nil {
					return err
				}
				snap.Steps[string(item.Key()[len(prefixStep):])] = v
			}
			return nil
		})
	})
	dbDir := filepath.Join(s.dir, dirDB)
	if err == nil && len(snap.Plan) == 0 {
		// Create stores the plan before anything else, and a plan is never
		// empty: this is loss. (Badger returns a value it fails to read from
		// the value log as empty, logging the error but returning none.)
		err = &DamagedError{RunID: s.runID, Path: dbDir, Cause: "the stored plan is missing or unreadable"}
	}
	if err = damaged(s.runID, dbDir, "", err); err != nil {
		logDamage(s.log, err)
		if errors.Is(err, ErrDamaged) {
			return nil, err
		}
		return nil, fmt.Errorf("run %q: load store: %w", s.runID, err)
	}
	return snap, nil
}

// Events calls fn with each committed event after seq after, oldest first,
// each one JSON object valid only during the call: the owner's way to
// read the log it holds.
func (s *Store) Events(after int64, fn func([]byte) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ready(); err != nil {
		return err
	}
	err := guard(func() error {
		return s.db.View(func(txn *badger.Txn) error {
			_, err := scanEvents(txn, after, fn)
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("run %q: read events: %w", s.runID, err)
	}
	return nil
}

// EventsAt calls fn with each committed event whose seq is seqs[i] (seqs
// ascending, no repeats), in that order, each one JSON object valid only
// during the call: how the owner reads the few events its step records
// point at (a cache hit's, exec.DecodeHitRecord). A seq with no event
// means the store is damaged; an error of fn ends the reading and is
// returned as it is.
func (s *Store) EventsAt(seqs []int64, fn func(i int, b []byte) error) error {
	for i := 1; i < len(seqs); i++ {
		if seqs[i] <= seqs[i-1] {
			return fmt.Errorf("run %q: event seqs %d, %d not ascending", s.runID, seqs[i-1], seqs[i])
		}
	}
	if len(seqs) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ready(); err != nil {
		return err
	}
	dbDir := filepath.Join(s.dir, dirDB)
	var fnErr error
	err := guard(func() error {
		return s.db.View(func(txn *badger.Txn) error {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixEv})
			defer it.Close()
			for i, seq := range seqs {
				k := evKey(seq)
				// Close ahead, stepping is cheaper than a Seek (which
				// reads its block again).
				if i > 0 && seq-seqs[i-1] <= seekAfter {
					for it.Valid() && bytes.Compare(it.Item().Key(), k) < 0 {
						it.Next()
					}
				} else {
					it.Seek(k)
				}
				if !it.Valid() || !bytes.Equal(it.Item().Key(), k) {
					return &DamagedError{RunID: s.runID, Path: dbDir, Cause: fmt.Sprintf("event %d is missing", seq)}
				}
				err := it.Item().Value(func(v []byte) error {
					fnErr = fn(i, v)
					return fnErr
				})
				if err != nil {
					return err
				}
			}
			return nil
		})
	})
	if fnErr != nil {
		return fnErr
	}
	if err = damaged(s.runID, dbDir, "", err); err != nil {
		logDamage(s.log, err)
		return err
	}
	return nil
}

// seekAfter is how far ahead EventsAt steps to the next event it reads
// rather than seek to it.
const seekAfter = 64

// getValue returns a copy of key's value, or nil if the key is absent.
func getValue(txn *badger.Txn, key []byte) ([]byte, error) {
	item, err := txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return item.ValueCopy(nil)
}

// ready checks that the store is open and that no staged commit is half-applied.
func (s *Store) ready() error {
	if s.db == nil {
		return fmt.Errorf("run %q: store is closed", s.runID)
	}
	if s.applyPending {
		if err := s.applyStaged(); err != nil {
			return fmt.Errorf("run %q: finish earlier commit: %w", s.runID, err)
		}
		s.applyPending = false
	}
	return nil
}

// Commit applies c atomically: its records and events are committed in one
// Badger transaction (or, for a Change too big for one, by the staged commit,
// which is just as atomic), and then the events are appended to events.jsonl
// in one write. Commit fails, writing nothing, if c.Events does not continue
// the log exactly or an event is not one line of valid JSON (checked unless
// the caller says it is, Event.WellFormed).
//
// The mirror is not fsynced: after a crash Open rebuilds it from Badger. If the
// append fails the commit still stands (Badger is the record); the failure goes
// to the log and the next commit or Close repairs the mirror.
func (s *Store) Commit(c Change) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ready(); err != nil {
		return err
	}
	last := s.lastSeq
	for _, ev := range c.Events {
		if ev.Seq != last+1 {
			return fmt.Errorf("run %q: event seq %d does not follow %d", s.runID, ev.Seq, last)
		}
		if ev.WellFormed {
			// Only what the mirror needs to find lines and objects.
			if len(ev.JSON) == 0 || ev.JSON[0] != '{' {
				return fmt.Errorf("run %q: event %d: event is not a JSON object", s.runID, ev.Seq)
			}
		} else if err := checkEventJSON(ev.JSON); err != nil {
			return fmt.Errorf("run %q: event %d: %w", s.runID, ev.Seq, err)
		}
		last = ev.Seq
	}
	for id := range c.Steps {
		if id == "" {
			return fmt.Errorf("run %q: step record with an empty step id", s.runID)
		}
	}
	if c.Run == nil && len(c.Steps) == 0 && len(c.Events) == 0 {
		return nil
	}
	if err := s.fit(largest(c)); err != nil {
		return fmt.Errorf("run %q: commit: %w", s.runID, err)
	}
	err := s.commitTxn(c, last)
	if errors.Is(err, badger.ErrTxnTooBig) {
		err = s.commitStaged(c, last)
	}
	if err != nil {
		return fmt.Errorf("run %q: commit: %w", s.runID, err)
	}
	s.lastSeq = last
	if c.Outcome != nil {
		o := *c.Outcome
		s.outcome = &o
	}
	s.appendMirror(c.Events)
	return nil
}

// checkEventJSON enforces what the mirror relies on: one JSON value per line.
func checkEventJSON(b []byte) error {
	if len(b) == 0 || b[0] != '{' {
		return errors.New("event is not a JSON object")
	}
	if bytes.IndexByte(b, '\n') >= 0 || bytes.IndexByte(b, '\r') >= 0 {
		return errors.New("event JSON spans more than one line")
	}
	if !json.Valid(b) {
		return errors.New("event is not valid JSON")
	}
	return nil
}

// commitTxn is the normal path: the whole Change in one transaction. Badger
// refuses a transaction over its batch limit with ErrTxnTooBig at Set time,
// before anything is written.
func (s *Store) commitTxn(c Change, last int64) error {
	txn, err := s.writeTxn()
	if err != nil {
		return err
	}
	defer txn.Discard()
	for k, v := range changeRecords(c) {
		if err := txn.Set(k, v); err != nil {
			return err
		}
	}
	if err := setEvents(txn, c.Events, last); err != nil {
		return err
	}
	return txn.Commit()
}

// largest returns the size of the biggest value c writes.
func largest(c Change) int {
	n := 0
	for _, v := range changeRecords(c) {
		n = max(n, len(v))
	}
	for _, ev := range c.Events {
		n = max(n, len(ev.JSON))
	}
	return n
}

// fit makes sure Badger takes a value of n bytes: no value may be bigger than
// a value log file, and a new run's first opening has small ones (see
// storeSizes). Past that, the store rotates to fullSizes first; at fullSizes
// a rotation cannot help, and Badger's own refusal stands.
func (s *Store) fit(n int) error {
	if int64(n) <= s.sizes.vlog || s.sizes == fullSizes || s.broken != nil {
		return nil
	}
	s.logf("a value of %d bytes: reopening the store with bigger files", n)
	return s.rotate()
}

// changeRecords yields the Badger key and value of every record in c.
func changeRecords(c Change) func(yield func([]byte, []byte) bool) {
	return func(yield func([]byte, []byte) bool) {
		if c.Run != nil && !yield(keyRun, c.Run) {
			return
		}
		for id, v := range c.Steps {
			if !yield(stepKey(id), v) {
				return
			}
		}
	}
}

// setEvents adds the events and the new last seq to txn.
func setEvents(txn *wtxn, evs []Event, last int64) error {
	if len(evs) == 0 {
		return nil
	}
	for _, ev := range evs {
		if err := txn.Set(evKey(ev.Seq), ev.JSON); err != nil {
			return err
		}
	}
	return txn.Set(keySeq, encodeSeq(last))
}

// Close closes the store, brings events.jsonl up to date, removes owner.json
// and releases ownership. owner.json goes before the lock, so a reader that
// finds the lock free and no owner.json knows the owner closed cleanly.
// Close is idempotent.
func (s *Store) Close() error {
	if v := s.Viewer(); v != nil {
		v.LastSeq() // it may still be reading the store: see Viewer
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	if s.db != nil {
		// Closing writes (events.jsonl, the memtable as a table): on a full
		// disk, give back the log's unused reservation first.
		s.releaseWAL()
		if s.mirror != nil && !s.mirrorOK {
			if err := s.repairMirror(); err != nil {
				errs = append(errs, noSpace(s.stateDir, "complete events.jsonl", fmt.Errorf("repair events.jsonl: %w", err)))
			}
		}
		s.closeWAL()
		if err := guard(s.closeDB); err != nil {
			errs = append(errs, fmt.Errorf("close store: %w", err))
		}
		s.db = nil
		private(s.dbDir())
	}
	if s.mirror != nil {
		if err := s.mirror.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close events.jsonl: %w", err))
		}
		s.mirror = nil
	}
	if s.lock != nil && s.outcome != nil && !s.leftOpen && !s.applyPending && len(errs) == 0 {
		// While the run is still owned: the next owner removes it after
		// taking the lock. A summary is a shortcut for readers: without
		// one, they read the run itself.
		if err := s.writeSummary(); err != nil {
			s.logf("no summary for readers: %v", err)
		}
	}
	if s.lock != nil {
		// (A store whose directory cannot be written has said so already.)
		if err := os.Remove(filepath.Join(s.dir, fileOwner)); err != nil && !errors.Is(err, os.ErrNotExist) {
			if len(errs) == 0 {
				errs = append(errs, fmt.Errorf("remove owner.json: %w", err))
			}
		} else if err := unmarkOwned(s.stateDir, s.runID); err != nil {
			s.logf("the index of owned runs keeps this run: %v", err)
		}
		if err := unlock(s.lock); err != nil {
			errs = append(errs, fmt.Errorf("release lock: %w", err))
		}
		s.lock.Close()
		s.lock = nil
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("run %q: %w", s.runID, err)
	}
	return nil
}

// closeDB closes Badger, which writes the memtable out as a table. Where a
// failed write may have left Badger unable to, or the table may not fit, it
// is left open instead, as a crash would leave it: its log holds every
// commit, and the next owner replays it. (Its goroutines and mappings go
// with the process, which for faber ends soon after.)
func (s *Store) closeDB() error {
	if s.broken != nil {
		s.logf("store left for its next owner after a failed write: %v", s.broken)
		s.leftOpen = true
		return nil
	}
	// A memtable's table is no bigger than its log (the current one's is
	// down to what was written, after releaseWAL); with it on level 0,
	// Badger may compact the tables before it stops.
	_, logs := memFiles(s.dbDir())
	need := logs + tablesSize(s.dbDir()) + closeMargin
	if err := needSpace(s.stateDir, s.dir, need, "closing run "+s.runID); err != nil {
		s.logf("store left for its next owner: %v", err)
		s.leftOpen = true
		return nil
	}
	// Badger's Close flushes the memtable and, when a write of that fails,
	// retries it forever: a run directory made read-only (or gone, or
	// failing with I/O errors) would keep faber here for good. So the
	// directory is tried first, and the close is given closeLimit; either
	// failing leaves the store as a crash would (its log holds every
	// commit) and is reported.
	if err := tryWrite(s.dbDir()); err != nil {
		s.logf("store left for its next owner: %v", err)
		s.leftOpen = true
		return fmt.Errorf("the run's directory cannot be written: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- guard(s.db.Close) }()
	select {
	case err := <-done:
		return err
	case <-time.After(closeLimit):
		s.logf("store left for its next owner: Badger did not close within %s", closeLimit)
		s.leftOpen = true
		return fmt.Errorf("the store did not close within %s (its files cannot be written; the debug log says why)", closeLimit)
	}
}

// closeLimit bounds closing Badger: writing out a memtable of at most
// memTableSize takes well under a second on any disk that still works.
var closeLimit = 10 * time.Second

// tryWrite checks that files can be created in dir: on Linux by asking
// the kernel (writableDir: a read-only mount, a directory gone or not
// writable), elsewhere by creating one (then removing it). Creating a file
// costs an inode, on ext4 after many deletions more than a short step; an
// I/O error that only a write would meet is bounded by closeLimit instead.
func tryWrite(dir string) error {
	if ok, err := writableDir(dir); ok {
		return err
	}
	return probeWrite(dir)
}

// probeWrite checks that a file can be created in dir (then removes it).
func probeWrite(dir string) error {
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return err
	}
	name := f.Name()
	err = f.Close()
	if rerr := os.Remove(name); err == nil {
		err = rerr
	}
	return err
}

// releaseWAL gives back the part of the memtable log's reservation that no
// commit has reached (memUsed bounds what was written): no more commits come.
func (s *Store) releaseWAL() {
	names, _ := memFiles(s.dbDir())
	if len(names) == 0 {
		return
	}
	off := (s.memUsed + 2*4096) &^ 4095
	releaseTail(names[len(names)-1], off, s.sizes.walReserve())
}

// logf writes a warning to the debug log.
func (s *Store) logf(format string, args ...any) {
	fmt.Fprintf(s.log, "state: run %s: "+format+"\n", append([]any{s.runID}, args...)...)
}

// removeEmptyLogs deletes zero-length memtable files (*.mem) and value
// logs (*.vlog). Badger creates such a file and only then sizes it; a
// process killed between the two (a kill -9 while the store opens, or
// while a value log rotates) leaves an empty file that Badger then refuses
// to open ("Create a new file"). An empty file never held a write —
// entries go in only after it is sized and its header written — so
// removing it loses nothing.
func removeEmptyLogs(dbDir string) {
	ents, err := os.ReadDir(dbDir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".mem") && !strings.HasSuffix(e.Name(), ".vlog") {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && fi.Size() == 0 {
			_ = os.Remove(filepath.Join(dbDir, e.Name()))
		}
	}
}
