package state

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// Badger keys. The store treats every value as an opaque blob; only the key
// layout is ours.
var (
	keyPlan    = []byte("plan")
	keyRun     = []byte("run")
	keySeq     = []byte("seq")
	prefixStep = []byte("step/")
	prefixEv   = []byte("ev/")
	// A Change too big for one Badger transaction is written under prefixStage
	// first and made visible by keyStaged (see commitStaged).
	prefixStage = []byte("stage/")
	keyStaged   = []byte("staged")
)

// evKey is "ev/" + the seq as a big-endian uint64, so Badger's byte order is
// event order and a seek to evKey(n) starts a scan at event n.
func evKey(seq int64) []byte {
	k := make([]byte, len(prefixEv)+8)
	copy(k, prefixEv)
	binary.BigEndian.PutUint64(k[len(prefixEv):], uint64(seq))
	return k
}

func stepKey(id string) []byte { return append(append([]byte(nil), prefixStep...), id...) }

func encodeSeq(seq int64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, uint64(seq))
	return b
}

func decodeSeq(b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("bad seq value of %d bytes", len(b))
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

// Badger tuning. Badger's defaults are for a database server holding gigabytes;
// faber writes a few kilobytes per step from a short-lived CLI process whose whole
// budget for a small run is ~40 MB RSS, and which must open and close quickly.
const (
	// memTableSize bounds the in-memory skiplist (a Go []byte arena, so only
	// touched pages cost RSS) and its mmapped write-ahead file. A transaction
	// may use at most 15% of it (~1.2 MiB here); bigger Changes take the
	// staged path in Commit instead of needing a server-sized memtable.
	memTableSize = 8 << 20
	// valueThreshold keeps step records and events (bytes to a few KiB) inside
	// the LSM tree, so a read never needs a second value-log lookup; only big
	// blobs such as a large plan snapshot go to the value log.
	valueThreshold = 64 << 10
	// valueLogFileSize: the value log is preallocated and mmapped at this size
	// (twice it, in fact); it only ever holds blobs over valueThreshold, so a
	// small file is plenty and keeps the run directory small.
	valueLogFileSize = 16 << 20
	// MaxPlanSize is the largest plan a store takes: Badger refuses a value
	// bigger than a value log file (spec.MaxPlanSize may not exceed it).
	MaxPlanSize = valueLogFileSize
	// blockCacheSize is the least Badger accepts with compression on; it
	// holds a few hundred decompressed 4 KiB blocks.
	blockCacheSize = 1 << 20
)

// levelZeroStall is the number of level-0 tables at which Badger stalls
// writes until a compaction, which with no compactors never comes: level 0
// must stay below it, holding at most maxLevel0 tables and two more (a
// rotation's and a flush's). The constant below does not compile otherwise.
const levelZeroStall = 8

const _ uint = levelZeroStall - maxLevel0 - 3

// storeSizes are the two file sizes one opening of Badger is made with: the
// memtable's (its write-ahead log is a file of twice that) and the value
// log's (a new file of twice that at every opening for writing). Badger
// creates both files sparse, maps them and writes their headers through the
// mapping; the kernel answers that first write by reading around it, up to
// the device's read-ahead (8 MiB on some virtual disks, 128 KiB by default),
// clipped to the file. Every page so read is allocated and zeroed at open
// and freed at close: with 8 MiB of read-ahead, some 6 ms of a small run's
// time, the better part of its fixed cost. So a new run opens small.
type storeSizes struct {
	mem  int64 // Badger's MemTableSize, and the log's reservation (space.go)
	vlog int64 // Badger's ValueLogFileSize: no value may be bigger
}

var (
	// fullSizes are for every opening but a small plan's first: after a
	// crash, replaying a log needs a memtable at least as big as the one
	// that wrote it, and this is the biggest.
	fullSizes = storeSizes{mem: memTableSize, vlog: valueLogFileSize}
	// firstSizes are for the opening that creates a run whose plan is at
	// most smallPlan: a log file of 4 MiB and a value log of 2 MiB (1 MiB,
	// the least Badger takes). The store moves to fullSizes at its first
	// rotation, after some 600 steps, or before writing a value bigger
	// than 1 MiB (fit).
	firstSizes = storeSizes{mem: 2 << 20, vlog: 1 << 20}
	// tinySizes are firstSizes for a run of a tiny plan (at most tinyPlan
	// and tinySteps): a log file of 1 MiB, its first rotation some 150
	// steps in. A one-step run's log was most of what the read-around
	// zeroed (4 MiB of 7), some 6% of its CPU with 8 MiB of read-ahead;
	// a chain of 100 still never rotates.
	tinySizes = storeSizes{mem: 512 << 10, vlog: 1 << 20}
	// miniSizes are tinySizes for a run of a few steps and a plan of a
	// page (at most miniPlan and miniSteps): a log file of 256 KiB, its
	// first rotation some 20 steps in. Of a one-step run's 1 MiB log at
	// tinySizes, the read-around zeroed all and the run wrote 8 KiB.
	miniSizes = storeSizes{mem: 128 << 10, vlog: 1 << 20}
)

// miniPlan and miniSteps bound a run that starts with miniSizes (its
// records, some 3 KiB a step, stay under a rotation), like tinyPlan and
// tinySteps.
const (
	miniPlan  = 4 << 10
	miniSteps = 8
)

// threshold is Badger's ValueThreshold at these sizes: valueThreshold, or
// less when the memtable is so small that a transaction (at most 15% of it,
// Badger's maxBatchSize) could not hold a value that big; Badger refuses a
// threshold above that. A bigger value goes to the value log, which Badger
// reads back checked like the rest (VerifyValueChecksum).
func (z storeSizes) threshold() int64 { return min(valueThreshold, z.mem*15/100) }

// small reports whether these are a tiny run's sizes (tinySizes or less).
// Such an opening neither compresses its tables nor keeps a block cache
// (which Badger requires with compression): its one table, written when
// it closes, is a few KiB, and Ristretto's cache cost some 1% of a one-step
// run's CPU to set up. Each table records its compression in the MANIFEST,
// so a later opening with Snappy reads it as it is.
func (z storeSizes) small() bool { return z.mem <= tinySizes.mem }

// tinyPlan and tinySteps bound a run that starts with tinySizes: its plan
// (at most 16 KiB, well under the 15% of the memtable a transaction may
// take, so its first records take one) and its steps once expanded, 1 to
// 100 (0 is not known).
const (
	tinyPlan  = 16 << 10
	tinySteps = 100
)

// smallPlan is the largest plan a run starts with firstSizes: it stays in the
// LSM tree (under valueThreshold), and its first records fit a transaction of
// the small memtable (bigger ones would take the staged path at once).
const smallPlan = valueThreshold - 1

// fewSteps is the most steps a run may have to start with firstSizes: its
// first rotation comes after some 600 steps, and a longer run would pay
// for it (a close and an opening of Badger) only to move to fullSizes.
const fewSteps = 400

// sizesFor returns the sizes a new run's store is created with, for a plan
// (its file) of steps steps (0: not known).
func sizesFor(plan []byte, steps int) storeSizes {
	if len(plan) <= miniPlan && steps >= 1 && steps <= miniSteps {
		return miniSizes
	}
	if len(plan) <= tinyPlan && steps >= 1 && steps <= tinySteps {
		return tinySizes
	}
	if len(plan) <= smallPlan && steps <= fewSteps {
		return firstSizes
	}
	return fullSizes
}

// badgerOptions returns Badger options sized for a CLI. Every setting that
// departs from badger.DefaultOptions says why.
func badgerOptions(dir string, opt Options, readOnly bool, z storeSizes) badger.Options {
	o := badger.DefaultOptions(dir).
		// SyncWrites: with it each commit is fsynced (msync of the WAL), so a
		// committed transition survives power loss, not only a crash of faber.
		// Where the store syncs its commits itself (sync.go), Badger doesn't.
		WithSyncWrites(opt.Sync && !fsyncCoversMmap).
		WithReadOnly(readOnly).
		WithMemTableSize(z.mem).
		// Two memtables: one being written, one being flushed. The default of
		// five only helps sustained server write bursts.
		WithNumMemtables(2).
		// Few L0 tables before compaction (Badger's setting, unused with no
		// compactors; the store compacts above maxLevel0); the stall
		// limit must stay above maxLevel0 + 2.
		WithNumLevelZeroTables(2).
		WithNumLevelZeroTablesStall(levelZeroStall).
		// Tables and levels sized for megabytes of data, not gigabytes.
		// A compaction holds each table it builds in Go memory, several at
		// once, uncompressed (about 6x the table): 512 KiB tables keep that
		// to ~25 MB when a run of 100,000 steps compacts, 2 MiB took ~115 MB
		// and set the run's peak RSS.
		WithBaseTableSize(512 << 10).
		WithBaseLevelSize(8 << 20).
		WithValueThreshold(z.threshold()).
		// Check each value read from the value log against its checksum, so
		// that a big plan snapshot changed on disk is an error (damage), not
		// a different plan. Tables are checked by checkTables on open.
		WithVerifyValueChecksum(true).
		WithValueLogFileSize(z.vlog).
		// Snappy on table blocks: step records and events are JSON that repeats
		// its keys, run id and timestamps' prefixes, so tables shrink severalfold.
		// ZSTD (level 1) shrank them about 6x but was a tenth of the CPU of a
		// 10,000-item cached fan-out (tables built at each memtable flush and
		// compaction); with Snappy that run takes 10% less CPU and its run
		// directory is 13.2 MB instead of 11.9 MB (tables 3.8 MB, not 2.6 MB;
		// events.jsonl, uncompressed, is most of it). The write-ahead log is
		// not compressed, only tables built when a memtable is flushed.
		// Badger reads either kind of table, so stores written before still open.
		WithCompression(options.Snappy).
		// Badger requires a block cache with compression (it panics without
		// one). A small one: a CLI reads each block about once (Load, a
		// reader's scan), so it only needs to hold the blocks being scanned.
		WithBlockCacheSize(blockCacheSize).
		// No index cache: table indexes stay with their tables; there are few.
		WithIndexCacheSize(0).
		// No compactors: Badger's would write new tables in the background at
		// any moment, and a table written while a step fills the disk faults
		// (see space.go). The store compacts when it opens Badger instead
		// (openDB), after checking for room; that keeps level 0 far from
		// NumLevelZeroTablesStall, where writes would stall.
		WithNumCompactors(0).
		// One writer per store (the owner, serialised by Store.mu), so conflict
		// detection would only cost memory and time.
		WithDetectConflicts(false).
		// No LOCK file of Badger's: the run's own lock (owner.go: the owner
		// holds it exclusively, a reader shared) already keeps a second
		// Badger off the store, in this process or another. Badger's guard
		// made and deleted one more file at every opening, and on an ext4
		// without a journal each deleted inode slows the next creations.
		WithBypassLockGuard(true).
		// Close fast: don't compact L0 on the way out, the next owner can.
		WithCompactL0OnClose(false).
		// Metrics are expvar counters nobody reads in a CLI.
		WithMetricsEnabled(false).
		// Badger's logger must never write over the TUI or into stdout/stderr.
		// (WithLoggingLevel is not used: it swaps in Badger's stderr logger.)
		WithLogger(newBadgerLogger(opt.Logger))
	if z.small() {
		o = o.WithCompression(options.None).WithBlockCacheSize(0)
	}
	return o
}

// badgerLogger adapts Badger's Logger to an io.Writer (the debug log).
// Badger logs from its own goroutines, hence the mutex.
type badgerLogger struct {
	mu sync.Mutex
	w  io.Writer
}

func newBadgerLogger(w io.Writer) badger.Logger {
	if w == nil {
		w = io.Discard
	}
	return &badgerLogger{w: w}
}

func (l *badgerLogger) logf(level, format string, args ...any) {
	if l.w == io.Discard {
		return
	}
	msg := strings.TrimRight(fmt.Sprintf(format, args...), "\n")
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "badger %s: %s\n", level, msg)
}

func (l *badgerLogger) Errorf(f string, a ...any)   { l.logf("error", f, a...) }
func (l *badgerLogger) Warningf(f string, a ...any) { l.logf("warning", f, a...) }
func (l *badgerLogger) Infof(f string, a ...any)    { l.logf("info", f, a...) }

// Debugf drops Badger's debug lines: they trace every replayed key.
func (l *badgerLogger) Debugf(string, ...any) {}

// seedStore writes, into a new run's empty store directory, the two files
// Badger writes first when it creates a store: MANIFEST (its magic text,
// faber's external magic 0, Badger's format version, and one empty change
// set) and KEYREGISTRY (a random IV and the unencrypted sanity text, no
// data keys), byte for byte as Badger v4 writes them (TestSeedStore holds
// that to Badger's own). Badger then opens them as an existing store's
// and creates only its logs. It writes each through a temporary file, an
// fsync and a directory fsync, five device flushes before a run's first
// commit, worth several milliseconds on a disk; here they are written as
// every other file of a run without FABER_SYNC is: a crash of faber
// cannot lose them, a power loss may (and then the run's meta.json, written
// after them, is lost too). With FABER_SYNC=1 the store is not seeded and
// Badger syncs them as it always does.
func seedStore(dbDir string) error {
	if err := os.Mkdir(dbDir, 0o700); err != nil {
		return err
	}
	manifest := make([]byte, 16)
	copy(manifest, "Bdgr")
	binary.BigEndian.PutUint16(manifest[4:6], 0) // external magic
	binary.BigEndian.PutUint16(manifest[6:8], badgerMagicVersion)
	// An empty change set: its length 0 and the CRC-32C of nothing, 0.
	registry := make([]byte, 16, 16+len(badgerSanityText))
	if _, err := rand.Read(registry); err != nil {
		return err
	}
	registry = append(registry, badgerSanityText...)
	for _, f := range []struct {
		name string
		data []byte
	}{{"MANIFEST", manifest}, {"KEYREGISTRY", registry}} {
		if err := os.WriteFile(filepath.Join(dbDir, f.name), f.data, 0o600); err != nil {
			return err
		}
	}
	return seedDiscard(filepath.Join(dbDir, badgerDiscard))
}

// seedDiscard writes Badger's discard-stats file as Badger leaves a new
// one (1 MiB, no entries: zeros), its first page written, not mapped. Badger
// creates it sparse and writes its first slot through a fresh mapping, and
// the kernel answers that first touch of a page not in its cache by reading
// around it, up to the device's read-ahead: the whole file, 256 pages
// allocated and zeroed for one 16-byte slot (about 2% of a one-step run's
// CPU on a disk with 8 MiB of read-ahead). Opened as an existing file, its
// first page already in the page cache, it costs one page. Badger reads
// its slots until the first zero one, so zeros are an empty file.
func seedDiscard(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(make([]byte, 4096))
	if err == nil {
		err = f.Truncate(badgerDiscardSize)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Badger v4's store format: the version in its MANIFEST's header, and the
// text its KEYREGISTRY holds after the IV when there is no encryption key.
const (
	badgerMagicVersion = 8
	badgerSanityText   = "Hello Badger"
	// badgerDiscard is Badger v4's discard-stats file, of badgerDiscardSize.
	badgerDiscard     = "DISCARD"
	badgerDiscardSize = 1 << 20
)
