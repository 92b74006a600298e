package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Owner describes the process that owns (or last owned) a run, as published in
// owner.json, and whether it is alive now.
type Owner struct {
	PID       int       `json:"pid"`
	StartTime string    `json:"start_time,omitempty"` // process start time; "" where unknown
	Host      string    `json:"host,omitempty"`
	Since     time.Time `json:"since"`
	// Alive is decided by the lock, not by the pid: the OS drops the owner's
	// lock when it dies, and a pid can be reused.
	Alive bool `json:"alive"`
}

// ownerRecord is the content of owner.json.
type ownerRecord struct {
	PID       int       `json:"pid"`
	StartTime string    `json:"start_time,omitempty"`
	Host      string    `json:"host,omitempty"`
	Since     time.Time `json:"since"`
}

// lockWait is how long Open keeps trying for a lock held by something that
// does not look like a live owner: a reader holding its shared lock for one
// read, or an owner between taking the lock and writing owner.json.
const lockWait = 2 * time.Second

// acquireOwnership takes the run's lock exclusively and returns the locked file.
func acquireOwnership(dir, runID string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, fileLock), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("run %q: open lock: %w", runID, err)
	}
	deadline := time.Now().Add(lockWait)
	for {
		ok, err := tryLock(f, true)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("run %q: take lock: %w", runID, err)
		}
		if ok {
			return f, nil
		}
		rec, _ := readOwnerRecord(dir)
		if ownerLooksAlive(rec) || time.Now().After(deadline) {
			f.Close()
			return nil, &LockedError{RunID: runID, PID: rec.PID}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ownerLooksAlive says whether the published owner is a running process. It is
// only asked while the lock is held by someone, to tell an owner (answer at
// once) from a reader (wait for it). Where the start time is known, pid and
// start time must both match, because pids are reused.
func ownerLooksAlive(rec ownerRecord) bool {
	if rec.PID <= 0 {
		return false
	}
	if host, _ := os.Hostname(); rec.Host != "" && rec.Host != host {
		return true // a state dir shared with another machine: its pids mean nothing here
	}
	if rec.StartTime != "" {
		if st := procStartTime(rec.PID); st != "" {
			return st == rec.StartTime
		}
	}
	return pidAlive(rec.PID)
}

// writeOwner publishes this process as the run's owner.
func writeOwner(dir string) error {
	host, _ := os.Hostname()
	rec := ownerRecord{
		PID:       os.Getpid(),
		StartTime: procStartTime(os.Getpid()),
		Host:      host,
		Since:     time.Now(),
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	// Not fsynced: after a power loss the lock is gone anyway, and a stale
	// owner.json next to a free lock already means "owner died".
	return writeFileAtomic(filepath.Join(dir, fileOwner), b, false)
}

// readOwnerRecord reads owner.json; a missing file is a zero record.
func readOwnerRecord(dir string) (ownerRecord, error) {
	var rec ownerRecord
	b, err := os.ReadFile(filepath.Join(dir, fileOwner))
	if errors.Is(err, os.ErrNotExist) {
		return rec, nil
	}
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return ownerRecord{}, err
	}
	return rec, nil
}

// writeFileAtomic writes data to a temporary file in the same directory and
// renames it over path, so a reader sees the old content or the new, never a
// part. With sync it fsyncs the file before the rename and the directory after,
// so the new content survives a power loss.
func writeFileAtomic(path string, data []byte, sync bool) error {
	return replaceFile(path, sync, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
}

// replaceFile is writeFileAtomic with the content written by fill.
func replaceFile(path string, sync bool, fill func(*os.File) error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = fill(f); err != nil {
		return err
	}
	// CreateTemp makes the file private (0600), as everything in the state
	// dir is: readers run as the same user.

	if sync {
		if err = f.Sync(); err != nil {
			return err
		}
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = renameRetry(f.Name(), path); err != nil {
		return err
	}
	if sync {
		syncDir(dir)
	}
	return nil
}

// renameRetry renames, retrying briefly: on Windows replacing a file fails
// while a reader has it open, and readers only hold these files for a moment.
func renameRetry(from, to string) error {
	var err error
	for range 5 {
		if err = os.Rename(from, to); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

// syncDir fsyncs a directory so a rename in it is durable. Best effort: some
// systems (Windows) cannot sync a directory, and there the rename is all we get.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
