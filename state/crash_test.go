package state

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

// TestCrashRecovery kills a committing owner with SIGKILL at random moments and
// checks, each time, that the next Open succeeds, the event log is contiguous
// in Badger and in the repaired mirror, and every step record agrees with the
// last event that touched it — including the 10,000 records of the big,
// staged commits, which must appear all-or-nothing.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns and kills processes")
	}
	dir := t.TempDir()
	s := newRun(t, dir, "r")
	if err := s.commitTxn(childChange(20), 20); !errors.Is(err, badger.ErrTxnTooBig) {
		t.Fatalf("the child's big commit fits in one transaction (%v); make it bigger", err)
	}
	s.Close()

	var last int64
	for round := range crashRounds {
		child, _ := startChild(t, "commits", dir, "r")
		// Some rounds die within the first commits, some after a few big ones.
		time.Sleep(time.Duration(rand.IntN(300)) * time.Millisecond)
		child.Process.Kill()
		child.Wait()

		o, err := OwnerOf(dir, "r")
		if err != nil || o.Alive || o.PID != child.Process.Pid {
			t.Fatalf("round %d: OwnerOf after kill = %+v, %v", round, o, err)
		}
		// Before anyone reopens it: readers get a contiguous prefix of the log.
		// A store left by a crash is not damaged: readers say nothing of it.
		log, err := ReadLog(dir, "r", 0)
		if err != nil || log.Damaged != nil {
			t.Fatalf("round %d: ReadLog of the crashed run: %v (damaged: %v)", round, err, log.Damaged)
		}
		before := log.Events
		checkContiguous(t, before, 1)

		s, err := Open(dir, "r", Options{Sync: true})
		if err != nil {
			// Badger's own error too: a damaged store's message names only
			// the file, and this is what a rare failure here needs.
			t.Fatalf("round %d: Open after kill -9: %v (Badger: %v)", round, err, errors.Unwrap(err))
		}
		snap, err := s.Load()
		if err != nil {
			t.Fatalf("round %d: Load: %v", round, err)
		}
		// The child said ready after its first commit, so the log grew.
		if snap.LastSeq <= last || int64(len(before)) > snap.LastSeq {
			t.Fatalf("round %d: last seq %d (was %d), readers saw %d", round, snap.LastSeq, last, len(before))
		}
		last = snap.LastSeq

		// Badger's own log: 1..LastSeq without a gap, and nothing after it.
		var stored [][]byte
		err = s.db.View(func(txn *badger.Txn) error {
			next, err := scanEvents(txn, 0, func(v []byte) error {
				stored = append(stored, append([]byte(nil), v...))
				return nil
			})
			if err == nil && next != last+1 {
				t.Errorf("round %d: store's events end at %d, last seq is %d", round, next-1, last)
			}
			if _, err := txn.Get(evKey(last + 1)); err == nil {
				t.Errorf("round %d: an event after the last seq", round)
			}
			return err
		})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		checkContiguous(t, stored, 1)

		// Step records agree with the events.
		lastBig := int64(0)
		for _, e := range stored {
			var v struct {
				Seq  int64
				Type string
			}
			json.Unmarshal(e, &v)
			if v.Type == "big" {
				lastBig = v.Seq
			}
		}
		if want := `{"seq":` + strconv.FormatInt(last, 10) + `}`; string(snap.Steps["s"]) != want {
			t.Fatalf("round %d: step s = %q, want %s", round, snap.Steps["s"], want)
		}
		nBig := 0
		for id, v := range snap.Steps {
			if !strings.HasPrefix(id, "b/") {
				continue
			}
			nBig++
			var rec struct{ Seq int64 }
			if json.Unmarshal(v, &rec); rec.Seq != lastBig {
				t.Fatalf("round %d: step %s has seq %d, want %d (last big commit)", round, id, rec.Seq, lastBig)
			}
		}
		if lastBig > 0 && nBig != bigSteps || lastBig == 0 && nBig != 0 {
			t.Fatalf("round %d: %d big step records, last big event %d", round, nBig, lastBig)
		}
		if stagedLeft(t, s) != 0 {
			t.Fatalf("round %d: staged keys left after Open", round)
		}

		// The repaired mirror, read as another process would, matches Badger.
		mirror, err := ReadEvents(dir, "r", 0)
		if err != nil || len(mirror) != len(stored) {
			t.Fatalf("round %d: mirror has %d events (%v), store %d", round, len(mirror), err, len(stored))
		}
		for i := range mirror {
			if string(mirror[i]) != string(stored[i]) {
				t.Fatalf("round %d: mirror event %d = %s, store has %s", round, i+1, mirror[i], stored[i])
			}
		}
		t.Logf("round %d: killed at seq %d (last big commit %d), mirror had %d", round, last, lastBig, len(before))
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
