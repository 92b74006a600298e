package state

import (
	"bytes"
	"errors"
	"fmt"

	badger "github.com/dgraph-io/badger/v4"
)

// A Badger transaction holds at most ~15% of a memtable (about 1.2 MiB here).
// A Change bigger than that — say the first records of a 10,000-step plan — is
// committed in three phases that keep it atomic:
//
//  1. its records are written under "stage/<key>", in as many transactions as
//     needed; nothing reads that prefix, so a crash here changes nothing
//     visible (Open deletes the leftovers);
//  2. one transaction writes its events, the new last seq and the "staged"
//     marker: this is the commit point;
//  3. the staged records are moved into place, each move deleting its staged
//     copy in the same transaction, and finally the marker is deleted.
//
// A crash after phase 2 is finished by Open (finishStaged) before anyone can
// Load, so a reader of the store sees either none or all of the Change. Moves
// are idempotent: a record is moved again only if its staged copy survived.

// commitStaged commits c in phases when it is too big for one transaction.
func (s *Store) commitStaged(c Change, last int64) error {
	txn, err := s.writeTxn()
	if err != nil {
		return err
	}
	for k, v := range changeRecords(c) {
		sk := append(append([]byte(nil), prefixStage...), k...)
		err := txn.Set(sk, v)
		if errors.Is(err, badger.ErrTxnTooBig) {
			if err = txn.Commit(); err == nil {
				txn, err = s.writeTxn()
			}
			if err == nil {
				err = txn.Set(sk, v)
			}
		}
		if err != nil {
			if txn != nil {
				txn.Discard()
			}
			return s.abortStaged(err)
		}
	}
	if err := txn.Commit(); err != nil {
		return s.abortStaged(err)
	}
	if err := s.hook("staged"); err != nil {
		return err
	}

	txn, err = s.writeTxn()
	if err != nil {
		return s.abortStaged(err)
	}
	defer txn.Discard()
	err = setEvents(txn, c.Events, last)
	if err == nil {
		err = txn.Set(keyStaged, []byte{1})
	}
	if err == nil {
		err = txn.Commit()
	}
	if errors.Is(err, badger.ErrTxnTooBig) {
		err = errors.New("too many events in one change for one transaction")
	}
	if err != nil {
		return s.abortStaged(err)
	}
	if err := s.hook("marked"); err != nil {
		return err
	}

	// Past the commit point the Change stands whatever happens next: if the
	// moves fail here, ready() retries them before the next Load or Commit,
	// and Open does after a crash.
	if err := s.applyStaged(); err != nil {
		s.applyPending = true
		s.logf("commit of events up to %d stands, but moving its records failed (will retry): %v", last, err)
	}
	return nil
}

// hook lets tests stop a staged commit at a named point, as a crash would.
func (s *Store) hook(point string) error {
	if s.testHook == nil {
		return nil
	}
	return s.testHook(point)
}

// abortStaged deletes the staged records of a commit that did not reach its
// commit point and returns err. If even that fails, Open deletes them later.
func (s *Store) abortStaged(err error) error {
	if derr := s.dropStaged(); derr != nil {
		s.logf("discard staged records: %v", derr)
	}
	return err
}

// finishStaged, run by Open, completes a staged commit that passed its commit
// point and discards one that did not.
func (s *Store) finishStaged() error {
	marked, err := s.hasKey(keyStaged)
	if err != nil {
		return err
	}
	if marked {
		s.logf("completing a commit interrupted by a crash")
		return s.applyStaged()
	}
	return s.dropStaged()
}

func (s *Store) hasKey(key []byte) (bool, error) {
	err := s.db.View(func(txn *badger.Txn) error {
		_, err := txn.Get(key)
		return err
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	return err == nil, err
}

// applyStaged moves every staged record into place, then deletes the marker.
func (s *Store) applyStaged() error {
	if err := s.rewriteStaged(true); err != nil {
		return err
	}
	return s.update(func(txn *wtxn) error { return txn.Delete(keyStaged) })
}

// dropStaged deletes every staged record.
func (s *Store) dropStaged() error { return s.rewriteStaged(false) }

// rewriteStaged deletes the staged records, in as many transactions as needed,
// first copying each to its real key if move is set. Each round scans what is
// left, so a round cut short by the transaction limit just continues.
func (s *Store) rewriteStaged(move bool) error {
	for {
		done, n, err := s.rewriteStagedRound(move)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		if n == 0 {
			return errors.New("a staged record does not fit in a transaction")
		}
	}
}

// rewriteStagedRound handles as many staged records as fit in one transaction.
// It reports whether none were left over and how many it handled.
func (s *Store) rewriteStagedRound(move bool) (done bool, n int, err error) {
	w, err := s.writeTxn()
	if err != nil {
		return false, 0, err
	}
	defer w.Discard()
	rtxn := s.db.NewTransaction(false)
	defer rtxn.Discard()
	it := rtxn.NewIterator(badger.IteratorOptions{Prefix: prefixStage, PrefetchValues: false})
	defer it.Close()
	done = true
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		sk := item.KeyCopy(nil)
		if move {
			v, err := item.ValueCopy(nil)
			if err != nil {
				return false, 0, err
			}
			err = w.Set(bytes.Clone(sk[len(prefixStage):]), v)
			if errors.Is(err, badger.ErrTxnTooBig) {
				done = false
				break
			}
			if err != nil {
				return false, 0, err
			}
		}
		// If only the delete does not fit, the record is moved again next
		// round, which is harmless.
		err := w.Delete(sk)
		if errors.Is(err, badger.ErrTxnTooBig) {
			done = false
			break
		}
		if err != nil {
			return false, 0, err
		}
		n++
	}
	if n == 0 && done {
		return true, 0, nil
	}
	if err := w.Commit(); err != nil {
		return false, 0, fmt.Errorf("move staged records: %w", err)
	}
	return done, n, nil
}
