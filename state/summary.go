package state

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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
	// View is the stamp of the run's view file (see Viewer), when the
	// owner left one for this summary.
	View *FileStamp `json:"view,omitempty"`
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

// stampOf is the stamp of the file name that fi describes.
func stampOf(name string, fi os.FileInfo) FileStamp {
	return FileStamp{Name: name, Size: fi.Size(), MTime: fi.ModTime().UnixNano()}
}

// fits reports whether fi is a regular file with the stamp's size and
// modification time.
func (f FileStamp) fits(fi os.FileInfo) bool {
	return fi.Mode().IsRegular() && fi.Size() == f.Size && fi.ModTime().UnixNano() == f.MTime
}

// stampRun takes the stamps of the files a summary is valid for, in name
// order, each a regular file: meta.json (List reads the run from it) and
// every file of the store (a reader would open it and may find it
// damaged). Not events.jsonl: a reader takes a closed run's events from its
// store, and from events.jsonl only when the store cannot be read.
func stampRun(dir string) ([]FileStamp, error) {
	var out []FileStamp
	add := func(name string, fi os.FileInfo) { out = append(out, stampOf(name, fi)) }
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
	r, err := openRunFiles(RunDir(stateDir, runID))
	if err != nil {
		return Summary{}, false
	}
	defer r.close()
	return readSummary(r, runID)
}

// readSummary is ReadSummary of the run whose directory r reads.
func readSummary(r runFiles, runID string) (s Summary, ok bool) {
	buf := summaryBufs.Get().(*[]byte)
	defer summaryBufs.Put(buf)
	b, err := r.read(fileSummary, *buf)
	if err != nil {
		return Summary{}, false
	}
	*buf = b[:0] // kept, grown if it had to
	if s, err = parseSummary(b); err != nil || s.RunID != runID || len(s.Files) < 2 {
		return Summary{}, false
	}
	for _, f := range s.Files {
		if !filepath.IsLocal(f.Name) || !r.matches(f) {
			return Summary{}, false
		}
	}
	return s, true
}

// summaryBufs are ReadSummary's buffers: a listing reads thousands of
// summaries, each parsed into strings of its own at once.
var summaryBufs = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

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
	return readToShort(make([]byte, 2048), func(b []byte) (int, error) { return syscall.Read(fd, b) })
}

// readToShort reads into buf, growing it, until read ends the file or
// returns less than asked: a short read of a regular file is its end.
func readToShort(buf []byte, read func([]byte) (int, error)) ([]byte, error) {
	buf = buf[:cap(buf)]
	if len(buf) == 0 {
		buf = make([]byte, 2048)
	}
	n := 0
	for {
		m, err := read(buf[n:])
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
			return buf[:n], nil
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

// writeSummary publishes the run's summary, and the run's view before it,
// called by Close once the store and events.jsonl are closed, while the
// run is still owned.
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
		ParentRunID: meta.ParentRunID, Outcome: *s.outcome, LastSeq: s.lastSeq, Files: files, View: s.publishView()}
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

// fileView is the run's view: what 'faber status' shows of it, as a replay
// of its event log gives it, left by an owner that closed the run cleanly
// and trusted by readers only while the run's summary is current and names
// it as it is (Summary.View).
const fileView = "view"

// Viewer keeps a run's view current with the store's commits, in the
// owner's memory; the store writes it out when it closes the run cleanly,
// beside the run's summary, so that readers show the run without a replay.
// Whoever commits tells the Viewer of each commit; the store only checks,
// by LastSeq, that it was told of all of them.
type Viewer interface {
	// LastSeq is the seq of the last event the view has taken in. It may
	// wait for the Viewer to be made, which may read the store (PriorView,
	// Events): Close calls it before it takes the store's lock.
	LastSeq() int64
	// WriteView writes the view file's content.
	WriteView(w io.Writer) error
}

// SetViewer gives the store the run's Viewer (see Viewer).
func (s *Store) SetViewer(v Viewer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.viewer = v
}

// Viewer returns what SetViewer gave, or nil.
func (s *Store) Viewer() Viewer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.viewer
}

// PriorView returns the content of the view file the run's last owner
// left, if it was current when this store opened the run (it names every
// event the store holds); ok is false otherwise.
func (s *Store) PriorView() (b []byte, lastSeq int64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.priorView == nil {
		return nil, 0, false
	}
	b, err := readStamped(s.dir, *s.priorView)
	if err != nil {
		return nil, 0, false
	}
	return b, s.priorSeq, true
}

// publishView writes the view file for the summary Close leaves, and
// returns its stamp; nil (and no view file) where there is no current view:
// no Viewer was told of every commit, and none was left by the last owner
// with nothing committed since.
func (s *Store) publishView() *FileStamp {
	path := filepath.Join(s.dir, fileView)
	switch {
	case s.viewer != nil && s.viewer.LastSeq() == s.lastSeq:
		if err := writeAtomic(path, s.viewer.WriteView); err != nil {
			s.logf("no view for readers: %v", err)
			break
		}
		if fi, err := os.Lstat(path); err == nil {
			st := stampOf(fileView, fi)
			return &st
		}
	case s.viewer == nil && s.priorView != nil && s.priorSeq == s.lastSeq:
		if fi, err := os.Lstat(path); err == nil && s.priorView.fits(fi) {
			return s.priorView
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.logf("remove a view that is not current: %v", err)
	}
	return nil
}

// writeAtomic writes a file by write, as writeFileAtomic does: a reader
// sees the old file or the whole new one.
func writeAtomic(path string, write func(io.Writer) error) error {
	return replaceFile(path, false, func(f *os.File) error {
		w := bufio.NewWriterSize(f, 256<<10)
		if err := write(w); err != nil {
			return err
		}
		return w.Flush()
	})
}

// ReadView returns the content of the run's view file while it is current:
// the run's summary is (ReadSummary) and names the view file as it is. ok
// is false otherwise; the caller then replays the run's event log.
func ReadView(stateDir, runID string) (b []byte, sum Summary, ok bool) {
	return readView(stateDir, runID, nil)
}

// ReadViewHead is ReadView of the view file's first bytes only, as many
// as more asks for: it is called with the file's first 64 KiB (all of it
// if smaller) and returns how many bytes the caller needs in all, which
// are then read from the same open file; ok is false when that is less
// than 0 or more than the file holds. A reader of the status table need
// not read the JSON after it, 90% of the file in a big run.
func ReadViewHead(stateDir, runID string, more func(head []byte) int) (b []byte, sum Summary, ok bool) {
	return readView(stateDir, runID, more)
}

// viewHead is how much of a view file ReadViewHead reads first.
const viewHead = 64 << 10

// readView is ReadViewHead, or ReadView where more is nil.
func readView(stateDir, runID string, more func(head []byte) int) ([]byte, Summary, bool) {
	sum, ok := ReadSummary(stateDir, runID)
	if !ok || sum.View == nil || sum.View.Name != fileView {
		return nil, sum, false
	}
	dir := RunDir(stateDir, runID)
	if more == nil {
		b, err := readStamped(dir, *sum.View)
		return b, sum, err == nil
	}
	f, err := openStamped(dir, *sum.View)
	if err != nil {
		return nil, sum, false
	}
	defer f.Close()
	b := make([]byte, min(sum.View.Size, viewHead))
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, sum, false
	}
	need := more(b)
	switch {
	case need < 0 || int64(need) > sum.View.Size:
		return nil, sum, false
	case need <= len(b):
		return b[:need], sum, true
	}
	read := len(b)
	b = slices.Grow(b, need-read)[:need]
	if _, err := io.ReadFull(f, b[read:]); err != nil {
		return nil, sum, false
	}
	return b, sum, true
}

// readStamped reads the file a stamp names, failing unless it is a regular
// file that still has the stamp's size and modification time.
func readStamped(dir string, st FileStamp) ([]byte, error) {
	f, err := openStamped(dir, st)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, st.Size)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, err
	}
	return b, nil
}

// openStamped opens the file a stamp names, failing unless it is a
// regular file that still has the stamp's size and modification time.
func openStamped(dir string, st FileStamp) (*os.File, error) {
	f, err := os.Open(filepath.Join(dir, st.Name))
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !st.fits(fi) {
		err = errors.New("changed since its stamp was taken")
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
