package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// fileSummary is the summary a run's last owner left when it closed the store
// cleanly: what 'faber list' shows of the run, so that listing never opens
// the stores of finished runs.
const fileSummary = "summary.json"

// Outcome is the run's status as its event log tells it (what a replay of the
// events would give), stated by the caller, who knows the events, along with
// the commit that changes it. The store keeps the last one it was given and
// publishes it in the run's summary when it closes.
type Outcome struct {
	Status     string     `json:"status"`
	FinishedAt *time.Time `json:"finished_at"`
}

// Summary is what List shows of a run whose owner closed it cleanly: the
// meta.json fields that list prints and sorts by, the outcome its last
// owner stated, and the stamps of the files it was taken from. ReadSummary
// returns it only while those files are unchanged since: any later writer
// (a new owner deletes the summary when it opens the store), a damaged file,
// or a file of the store replaced or removed makes it stale, and the reader
// reads the run itself instead.
type Summary struct {
	RunID       string    `json:"run_id"`
	Plan        string    `json:"plan"`
	StartedAt   time.Time `json:"started_at"`
	Created     int64     `json:"created"`
	ParentRunID string    `json:"parent_run_id,omitempty"`
	Outcome
	// LastSeq is the seq of the run's last event when the summary was taken.
	LastSeq int64 `json:"last_seq"`
	// Files are the stamps of meta.json and every file of db/.
	Files []FileStamp `json:"files"`
}

// Meta returns the fields of the run's metadata that the summary holds.
func (s Summary) Meta() Meta {
	return Meta{RunID: s.RunID, Plan: s.Plan, StartedAt: s.StartedAt, Created: s.Created, ParentRunID: s.ParentRunID}
}

// FileStamp identifies the content of a file the cheap way, as make does:
// its size and modification time. Writing a file, truncating it or putting
// another in its place changes them.
type FileStamp struct {
	Name  string `json:"name"` // relative to the run dir, with '/'
	Size  int64  `json:"size"`
	MTime int64  `json:"mtime"` // UnixNano
}

// stampRun takes the stamps of the files a summary is valid for, in name
// order, each a regular file: meta.json (List reads the run from it) and
// every file of the store (a reader would open it and may find it
// damaged). Not events.jsonl: a reader takes a closed run's events from its
// store, and from events.jsonl only when the store cannot be read.
func stampRun(dir string) ([]FileStamp, error) {
	var out []FileStamp
	add := func(name string, fi os.FileInfo) {
		out = append(out, FileStamp{Name: name, Size: fi.Size(), MTime: fi.ModTime().UnixNano()})
	}
	fi, err := os.Lstat(filepath.Join(dir, fileMeta))
	if err != nil {
		return nil, err
	}
	add(fileMeta, fi)
	ents, err := os.ReadDir(filepath.Join(dir, dirDB))
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			return nil, err
		}
		add(dirDB+"/"+e.Name(), fi)
	}
	slices.SortFunc(out, func(a, b FileStamp) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// ReadSummary returns the run's summary if it has one and it is current: its
// files are as they were when it was taken. ok is false for a run without one
// (running, never closed cleanly, written before summaries existed), with a
// stale one, or with one that cannot be read; the caller then reads the run
// itself. It never fails: a summary is a shortcut, never the record.
//
// Only the files the summary names are checked, not that no other file was
// added to the store: only an owner adds files there, and a new owner removes
// the summary first.
func ReadSummary(stateDir, runID string) (s Summary, ok bool) {
	if !validRunID(runID) {
		return Summary{}, false
	}
	dir := RunDir(stateDir, runID)
	b, err := readSmall(filepath.Join(dir, fileSummary))
	if err != nil {
		return Summary{}, false
	}
	if err := json.Unmarshal(b, &s); err != nil || s.RunID != runID || len(s.Files) < 2 {
		return Summary{}, false
	}
	for _, f := range s.Files {
		if !filepath.IsLocal(f.Name) {
			return Summary{}, false
		}
		fi, err := os.Lstat(filepath.Join(dir, f.Name))
		if err != nil || !fi.Mode().IsRegular() || fi.Size() != f.Size || fi.ModTime().UnixNano() != f.MTime {
			return Summary{}, false
		}
	}
	return s, true
}

// readSmall reads a small file with fewer system calls than os.ReadFile,
// as a listing does for thousands of them: no stat for its size, and the
// file not set up for the runtime's poller (os.Open's fcntl and epoll calls,
// of no use for a regular file).
func readSmall(path string) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	buf := make([]byte, 2048)
	n := 0
	for {
		m, err := syscall.Read(fd, buf[n:])
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if m == 0 {
			return buf[:n], nil
		}
		n += m
		if n < len(buf) {
			return buf[:n], nil // a short read of a regular file is its end
		}
		buf = append(buf, make([]byte, len(buf))...)
	}
}

// removeSummary deletes the run's summary: done by every new owner, before
// it changes anything, so that no reader takes a summary for current while
// the run changes.
func removeSummary(dir string) error {
	err := os.Remove(filepath.Join(dir, fileSummary))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// writeSummary publishes the run's summary, called by Close once the store
// and events.jsonl are closed, while the run is still owned.
func (s *Store) writeSummary() error {
	meta, err := ReadMeta(s.stateDir, s.runID)
	if err != nil {
		return err
	}
	files, err := stampRun(s.dir)
	if err != nil {
		return err
	}
	sum := Summary{RunID: meta.RunID, Plan: meta.Plan, StartedAt: meta.StartedAt, Created: meta.Created,
		ParentRunID: meta.ParentRunID, Outcome: *s.outcome, LastSeq: s.lastSeq, Files: files}
	if sum.RunID == "" {
		sum.RunID = s.runID
	}
	b, err := json.Marshal(sum)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(s.dir, fileSummary), b, false); err != nil {
		return fmt.Errorf("write %s: %w", fileSummary, err)
	}
	return nil
}
