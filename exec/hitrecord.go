package exec

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// A cache hit's step record (README "Storage and durability"). A hit
// commits its record with two events, step_cache_hit and step_status, in
// one transaction, and those two already say nearly all the record says:
// its status, attempt, phase, times, key and the attempt it reuses. So the
// record of a plain hit keeps only the rest (name, needs, fan-out, the
// definition's hash) and the seq of its step_status event; a reader
// rebuilds the whole record from the two events (DecodeHitRecord). On a
// 10,000-item cached fan-out the full records were 40% of what the run
// wrote to its store.
//
// A hit record is:
//
//	0x01                      never the first byte of a JSON record
//	uvarint seq               of the step_status event; step_cache_hit is seq-1
//	uvarint name              0: the name is the id; n: n-1 bytes of name follow
//	uvarint len, fan_out
//	uvarint len, hash
//	uvarint needs             0: nil; n: n-1 needs follow, each uvarint len, id
const hitRecordMark = 0x01

// IsHitRecord reports whether a stored step record is a hit record, and
// the seq of the step_status event it points at.
func IsHitRecord(b []byte) (seq int64, ok bool) {
	if len(b) == 0 || b[0] != hitRecordMark {
		return 0, false
	}
	v, n := binary.Uvarint(b[1:])
	if n <= 0 || v < 2 || v > 1<<62 {
		return 0, true // a hit record, damaged: DecodeHitRecord says so
	}
	return int64(v), true
}

// AppendHitRecord appends the hit record of st to b, given the events
// committed with it: hit (step_cache_hit) and status (step_status), as
// stored, secrets masked. ok is false, and b unchanged, unless st is a
// cache hit and nothing else and the two events carry every field of st
// that the hit record leaves out, byte for byte: then the full record
// (AppendStepJSON) is the one to write.
func AppendHitRecord(b []byte, st *StepState, hit, status *Event) (_ []byte, ok bool) {
	if !plainHit(st) || !recordUTF8(st) || !carries(st, hit, status) {
		return b, false
	}
	b = append(b, hitRecordMark)
	b = binary.AppendUvarint(b, uint64(status.Seq))
	if st.Name == st.ID {
		b = binary.AppendUvarint(b, 0)
	} else {
		b = append(binary.AppendUvarint(b, uint64(len(st.Name))+1), st.Name...)
	}
	b = append(binary.AppendUvarint(b, uint64(len(st.FanOut))), st.FanOut...)
	b = append(binary.AppendUvarint(b, uint64(len(st.Hash))), st.Hash...)
	if st.Needs == nil {
		return binary.AppendUvarint(b, 0), true
	}
	b = binary.AppendUvarint(b, uint64(len(st.Needs))+1)
	for _, n := range st.Needs {
		b = append(binary.AppendUvarint(b, uint64(len(n))), n...)
	}
	return b, true
}

// plainHit reports whether st is a step settled as cached with nothing on
// its record but what a hit sets and what its definition gives: a step that
// came to its hit with a history (attempts, a gate, a classification,
// spending ...) keeps its full record. TestHitRecordKeepsEveryField holds
// this list to StepState's fields.
func plainHit(st *StepState) bool {
	return st.Status == StatusCached && st.CachedFrom != nil && st.StartedAt != nil && st.FinishedAt != nil &&
		st.ExitCode == nil && st.Error == "" && st.Remediation == nil && st.Expanded == nil &&
		st.ChildRunID == "" && len(st.Attempts) == 0 && st.Limits == nil && st.Classified == "" &&
		st.PGID == 0 && st.PStart == "" && st.Job == "" && len(st.Outputs) == 0 && st.Spent == nil &&
		!st.BudgetWaived && st.Gate == nil && st.PhaseGate == nil && !st.AttemptReserved
}

// carries reports whether hit and status, consecutive events of st, say
// exactly what st says of its status, attempt, phase, times, key and the
// attempt reused. The payloads compared are the masked ones, the very
// values their JSON was written from.
func carries(st *StepState, hit, status *Event) bool {
	if hit == nil || status == nil || hit.Type != EvStepCacheHit || status.Type != EvStepStatus ||
		hit.StepID != st.ID || status.StepID != st.ID || hit.Seq != status.Seq-1 || hit.Seq < 1 ||
		status.Status != st.Status || status.Attempt != st.Attempt || status.ExitCode != nil {
		return false
	}
	h, ok := hit.Data.(*CacheHit)
	if !ok || h == nil || h.CachedAttempt != st.CachedFrom.Attempt || h.CachedRunID != st.CachedFrom.RunID ||
		h.CachedSeq != st.CachedFrom.Seq || h.Key != st.CacheKey {
		return false
	}
	d, ok := status.Data.(*StepStatus)
	return ok && d != nil && d.Phase == st.Phase && d.CacheKey == st.CacheKey && d.Error == "" &&
		d.ChildRunID == "" && len(d.Outputs) == 0 && d.Spent == nil && d.AttemptEnd == nil &&
		sameTime(d.StartedAt, st.StartedAt) && sameTime(d.FinishedAt, st.FinishedAt) &&
		d.DurationMs != nil && *d.DurationMs == st.DurationMs
}

// recordUTF8 reports whether the strings the hit record keeps are UTF-8, as
// a JSON record keeps them: it would write U+FFFD for a byte that is not.
func recordUTF8(st *StepState) bool {
	if !utf8.ValidString(st.ID) || !utf8.ValidString(st.Name) || !utf8.ValidString(st.FanOut) || !utf8.ValidString(st.Hash) {
		return false
	}
	for _, n := range st.Needs {
		if !utf8.ValidString(n) {
			return false
		}
	}
	return true
}

func sameTime(a, b *time.Time) bool { return a != nil && b != nil && a.Equal(*b) }

// errHitRecord is what a hit record that does not decode, or whose events
// do not fit it, wraps: the store is damaged.
var errHitRecord = errors.New("hit record")

// DecodeHitRecord rebuilds the record of step id from its hit record b and
// the JSON of the events at seq-1 (hitJSON) and seq (statusJSON), seq as
// IsHitRecord gives it. Times are read back as a JSON record's are: in the
// reader's local zone.
func DecodeHitRecord(id string, b, hitJSON, statusJSON []byte) (*StepState, error) {
	bad := func(why string) (*StepState, error) { return nil, fmt.Errorf("%w: %s", errHitRecord, why) }
	seq, ok := IsHitRecord(b)
	if !ok || seq == 0 {
		return bad("no hit record")
	}
	r := hitReader{b: b[1:]}
	r.uvarint() // seq, read above
	st := &StepState{ID: id, Name: id}
	if n := r.uvarint(); n > 0 {
		st.Name = r.str(n - 1)
	}
	st.FanOut = r.str(r.uvarint())
	st.Hash = r.str(r.uvarint())
	if n := r.uvarint(); n > 0 {
		if n-1 > uint64(len(r.b)) {
			return bad("needs")
		}
		st.Needs = make([]string, n-1)
		for i := range st.Needs {
			st.Needs[i] = r.str(r.uvarint())
		}
	}
	if r.err || len(r.b) != 0 {
		return bad("malformed")
	}
	var h struct {
		Seq           int64  `json:"seq"`
		Type          string `json:"type"`
		StepID        string `json:"step_id"`
		CachedAttempt int    `json:"cached_attempt"`
		CachedRunID   string `json:"cached_run_id"`
		CachedSeq     int64  `json:"cached_seq"`
		Key           string `json:"key"`
	}
	if err := json.Unmarshal(hitJSON, &h); err != nil || h.Seq != seq-1 || h.Type != EvStepCacheHit || h.StepID != id {
		return bad(fmt.Sprintf("event %d is not its step_cache_hit", seq-1))
	}
	var s struct {
		Seq        int64      `json:"seq"`
		Type       string     `json:"type"`
		StepID     string     `json:"step_id"`
		Status     string     `json:"status"`
		Attempt    int        `json:"attempt"`
		Phase      string     `json:"phase"`
		CacheKey   string     `json:"cache_key"`
		StartedAt  *time.Time `json:"started_at"`
		FinishedAt *time.Time `json:"finished_at"`
		DurationMs *int64     `json:"duration_ms"`
	}
	if err := json.Unmarshal(statusJSON, &s); err != nil || s.Seq != seq || s.Type != EvStepStatus || s.StepID != id ||
		s.Status != StatusCached || s.CacheKey != h.Key || s.StartedAt == nil || s.FinishedAt == nil || s.DurationMs == nil {
		return bad(fmt.Sprintf("event %d is not its cached step_status", seq))
	}
	st.Status, st.Attempt, st.Phase, st.CacheKey = s.Status, s.Attempt, s.Phase, s.CacheKey
	st.StartedAt, st.FinishedAt, st.DurationMs = asRecorded(*s.StartedAt), asRecorded(*s.FinishedAt), *s.DurationMs
	st.CachedFrom = &CachedFrom{Attempt: h.CachedAttempt, RunID: h.CachedRunID, Seq: h.CachedSeq}
	return st, nil
}

// asRecorded is t, an instant an event gives, as a full record written
// in the reader's zone reads back (jsonTime of it in Local), so that a
// rebuilt record is the very value the full one would be.
func asRecorded(t time.Time) *time.Time {
	u := jsonTime(t.Local())
	return &u
}

// hitReader reads a hit record; err is set, and every read after it
// returns zero, once a read runs past the end.
type hitReader struct {
	b   []byte
	err bool
}

func (r *hitReader) uvarint() uint64 {
	if r.err {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *hitReader) str(n uint64) string {
	if r.err || n > uint64(len(r.b)) {
		r.err = true
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}
