package state

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	badger "github.com/dgraph-io/badger/v4"
)

// events.jsonl mirrors the committed event log for processes that may not open
// the store: line n is the event with seq n. The owner appends after each
// commit; readers take complete lines only, so a torn last line (a crash in the
// middle of an append) is invisible to them until Open repairs it.

// appendMirror appends the events of a commit in one write, so that a reader
// sees a commit's events appear together (short of a torn write). A mirror left
// in doubt by an earlier failure is repaired instead, which covers evs too.
func (s *Store) appendMirror(evs []Event) {
	if len(evs) == 0 {
		return
	}
	if !s.mirrorOK {
		if err := s.repairMirror(); err != nil {
			s.logf("repair events.jsonl: %v", err)
		}
		return
	}
	n := 0
	for _, ev := range evs {
		n += len(ev.JSON) + 1
	}
	buf := make([]byte, 0, n)
	for _, ev := range evs {
		buf = append(append(buf, ev.JSON...), '\n')
	}
	if _, err := s.mirror.Write(buf); err != nil {
		s.mirrorOK = false
		s.logf("append to events.jsonl: %v", err)
	}
}

// repairMirror makes events.jsonl hold exactly events 1..lastSeq: it keeps the
// complete lines that are there (at most lastSeq of them), cuts off a torn last
// line or lines beyond the store (possible only if Badger lost commits that the
// mirror kept, e.g. a power loss without Sync), and appends what is missing
// from Badger. It streams, so a long log is never held in memory.
func (s *Store) repairMirror() error {
	s.mirrorOK = false
	f := s.mirror
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	var lines, cut, off int64
	buf := make([]byte, 64<<10)
	for lines < s.lastSeq && off < size {
		n, err := f.ReadAt(buf, off)
		chunk := buf[:n]
		for lines < s.lastSeq {
			i := bytes.IndexByte(chunk, '\n')
			if i < 0 {
				break
			}
			lines++
			cut = off + int64(n-len(chunk)+i+1)
			chunk = chunk[i+1:]
		}
		off += int64(n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
	}
	if cut < size {
		// By name, not through f: on Windows a file opened for append has no
		// right to change its length.
		if err := os.Truncate(filepath.Join(s.dir, fileEvents), cut); err != nil {
			return err
		}
	}
	if lines < s.lastSeq {
		if err := s.copyEvents(f, lines); err != nil {
			return err
		}
	}
	s.mirrorOK = true
	return nil
}

// copyEvents writes events after seq `after` from Badger to w, one per line,
// and checks that they run without a gap up to lastSeq.
func (s *Store) copyEvents(w io.Writer, after int64) error {
	next := after + 1
	var buf []byte
	err := s.db.View(func(txn *badger.Txn) error {
		var err error
		next, err = scanEvents(txn, after, func(v []byte) error {
			buf = append(append(buf, v...), '\n')
			if len(buf) >= 1<<20 {
				_, err := w.Write(buf)
				buf = buf[:0]
				return err
			}
			return nil
		})
		return err
	})
	if err != nil {
		return err
	}
	if _, err := w.Write(buf); err != nil {
		return err
	}
	if next-1 != s.lastSeq {
		return fmt.Errorf("event log ends at seq %d, want %d", next-1, s.lastSeq)
	}
	return nil
}

// scanEvents calls fn with the value of each event after seq `after`, in order,
// failing on a gap. It returns the seq after the last one seen.
func scanEvents(txn *badger.Txn, after int64, fn func([]byte) error) (int64, error) {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixEv})
	defer it.Close()
	next := after + 1
	for it.Seek(evKey(next)); it.Valid(); it.Next() {
		item := it.Item()
		seq, err := decodeSeq(item.Key()[len(prefixEv):])
		if err != nil {
			return next, err
		}
		if seq != next {
			return next, fmt.Errorf("event log has a gap: seq %d follows %d", seq, next-1)
		}
		if err := item.Value(fn); err != nil {
			return next, err
		}
		next++
	}
	return next, nil
}

// readMirror returns the events after seq `after` from events.jsonl, complete
// lines only. A run has the file from its creation on: a missing one is an
// error (matching os.ErrNotExist).
func readMirror(dir string, after int64) ([][]byte, error) {
	data, err := os.ReadFile(filepath.Join(dir, fileEvents))
	if err != nil {
		return nil, err
	}
	data = data[:bytes.LastIndexByte(data, '\n')+1]
	var out [][]byte
	for seq := int64(1); len(data) > 0; seq++ {
		i := bytes.IndexByte(data, '\n')
		if seq > after {
			// Capped, so that appending to one event cannot overwrite the next.
			out = append(out, data[:i:i])
		}
		data = data[i+1:]
	}
	return out, nil
}
