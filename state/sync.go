package state

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Durable commits (Options.Sync, FABER_SYNC=1).
//
// Badger's SyncWrites makes a commit durable by msyncing its write-ahead log
// after every request and the value log after every batch, even when the
// value log was not written: two device flushes per commit where one does,
// and a flush is most of what a durable commit costs (0.1–0.5 ms on this
// project's disks; a chain of steps pays it once per step). Where fsync of a
// file is known to write back what any shared mapping of it changed (Linux:
// the page cache is the mapping), the store syncs instead: Badger commits
// without SyncWrites, and the store fdatasyncs the log file that commit
// wrote, plus the value log when the commit put a value there (a large
// record), before Commit returns. Elsewhere Badger's SyncWrites stays.

// ownSync reports whether the store syncs its commits itself.
func (s *Store) ownSync() bool { return s.opt.Sync && fsyncCoversMmap }

// openWAL opens the newest memtable log, the one the next commits write,
// for syncing.
func (s *Store) openWAL() error {
	names, _ := memFiles(s.dbDir())
	if len(names) == 0 {
		return fmt.Errorf("no write-ahead log in %s", s.dbDir())
	}
	f, err := os.Open(names[len(names)-1])
	if err != nil {
		return err
	}
	s.wal = f
	return nil
}

// closeWAL closes the log opened for syncing (Badger is about to close).
func (s *Store) closeWAL() {
	if s.wal != nil {
		s.wal.Close()
		s.wal = nil
	}
}

// syncCommit makes the commit just made durable: a no-op unless the store
// syncs its commits itself.
func (s *Store) syncCommit(vlog bool) error {
	if !s.ownSync() {
		return nil
	}
	if s.wal == nil {
		if err := s.openWAL(); err != nil {
			return fmt.Errorf("sync the commit: %w", err)
		}
	} else if s.nextLogExists() {
		// Badger moved on to a new log (it does when a memtable is full,
		// which rotate is meant to prevent): sync the one it writes now.
		s.closeWAL()
		if err := s.openWAL(); err != nil {
			return fmt.Errorf("sync the commit: %w", err)
		}
	}
	if err := s.hook("sync " + filepath.Base(s.wal.Name())); err != nil {
		return fmt.Errorf("sync the commit: %w", err)
	}
	if err := fdatasync(s.wal); err != nil {
		return fmt.Errorf("sync the commit: %w", err)
	}
	if vlog {
		if err := syncNewest(s.dbDir(), ".vlog"); err != nil {
			return fmt.Errorf("sync the commit's value log: %w", err)
		}
	}
	return nil
}

// nextLogExists reports whether Badger created the log after s.wal's.
func (s *Store) nextLogExists() bool {
	base := filepath.Base(s.wal.Name())
	fid, err := strconv.Atoi(strings.TrimSuffix(base, ".mem"))
	if err != nil {
		return false
	}
	_, err = os.Stat(filepath.Join(s.dbDir(), memFileName(fid+1)))
	return err == nil
}

// syncNewest fdatasyncs the newest of Badger's files in dir whose names end
// in ext.
func syncNewest(dir, ext string) error {
	names, _ := numberedFiles(dir, ext)
	if len(names) == 0 {
		return nil
	}
	f, err := os.Open(names[len(names)-1])
	if err != nil {
		return err
	}
	defer f.Close()
	return fdatasync(f)
}

// memFileName is the name Badger gives memtable log fid.
func memFileName(fid int) string { return fmt.Sprintf("%05d.mem", fid) }
