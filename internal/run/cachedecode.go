package run

import (
	"encoding/json"
	"strconv"

	"github.com/faber-run/faber/exec"
)

// decodeEntry decodes a cache entry as json.Unmarshal does. A fan-out's
// items read one entry each, and encoding/json's reflection took most of
// a cache hit's CPU; the entries faber writes (json.Marshal of
// exec.CacheEntry) are read here directly. Anything this reader does not
// expect — a key not spelt as faber writes it, a string with an escape or
// a byte outside printable ASCII, null, a number that is not a plain
// integer, the mask, a syntax error — is left to json.Unmarshal, so the
// result is always json.Unmarshal's.
func decodeEntry(b []byte) (*exec.CacheEntry, error) {
	if e, ok := fastEntry(b); ok {
		return e, nil
	}
	var e exec.CacheEntry
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, err
	}
	return &e, nil
}

// entryScan reads the JSON of a cache entry; ok turns false at the first
// thing it does not handle.
type entryScan struct {
	b  []byte
	i  int
	ok bool
}

func (s *entryScan) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// byte consumes c (after white space).
func (s *entryScan) byte(c byte) bool {
	s.space()
	if s.ok && s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str reads a string of printable ASCII without escapes.
func (s *entryScan) str() string {
	if !s.byte('"') {
		s.ok = false
		return ""
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			v := string(s.b[start:s.i])
			s.i++
			return v
		case c == '\\' || c < 0x20 || c >= 0x7f:
			s.ok = false
			return ""
		}
		s.i++
	}
	s.ok = false
	return ""
}

// integer reads a JSON integer (no fraction, no exponent).
func (s *entryScan) integer() int64 {
	s.space()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	digits := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	if s.i == digits || (s.b[digits] == '0' && s.i-digits > 1) {
		s.ok = false
		return 0
	}
	if s.i < len(s.b) {
		switch s.b[s.i] {
		case '.', 'e', 'E':
			s.ok = false
			return 0
		}
	}
	n, err := strconv.ParseInt(string(s.b[start:s.i]), 10, 64)
	if err != nil {
		s.ok = false
	}
	return n
}

// strMap reads an object of strings.
func (s *entryScan) strMap() map[string]string {
	if !s.byte('{') {
		s.ok = false
		return nil
	}
	m := map[string]string{}
	if s.byte('}') {
		return m
	}
	for s.ok {
		k := s.str()
		if !s.byte(':') {
			s.ok = false
			return nil
		}
		m[k] = s.str()
		if s.byte(',') {
			continue
		}
		if !s.byte('}') {
			s.ok = false
		}
		break
	}
	return m
}

// entryKeys numbers the keys of an entry from 1 (0: any other key).
var entryKeys = map[string]int{"attempt": 1, "def_hash": 2, "inputs": 3, "key": 4, "key_out": 5, "mode": 6,
	"needs": 7, "outputs": 8, "plan": 9, "run_id": 10, "seq": 11, "step": 12, "time": 13}

func fastEntry(b []byte) (*exec.CacheEntry, bool) {
	s := &entryScan{b: b, ok: true}
	e := &exec.CacheEntry{}
	if !s.byte('{') {
		return nil, false
	}
	if s.byte('}') {
		s.space()
		return e, s.i == len(b)
	}
	var seen uint32
	for s.ok {
		key := s.str()
		bit := uint32(1) << (entryKeys[key] & 31)
		if !s.byte(':') || seen&bit != 0 {
			return nil, false // a repeated map merges in json.Unmarshal
		}
		seen |= bit
		switch key {
		case "attempt":
			n := s.integer()
			if n != int64(int(n)) {
				return nil, false
			}
			e.Attempt = int(n)
		case "def_hash":
			e.DefHash = s.str()
		case "inputs":
			e.Inputs = s.strMap()
		case "key":
			e.Key = s.str()
		case "key_out":
			e.KeyOut = s.str()
		case "mode":
			e.Mode = s.str()
		case "needs":
			e.Needs = s.strMap()
		case "outputs":
			e.Outputs = s.strMap()
		case "plan":
			e.Plan = s.str()
		case "run_id":
			e.RunID = s.str()
		case "seq":
			e.Seq = s.integer()
		case "step":
			e.Step = s.str()
		case "time":
			e.Time = s.str()
		default:
			return nil, false // "mask", or a key json.Unmarshal matches otherwise
		}
		if s.byte(',') {
			continue
		}
		if !s.byte('}') {
			return nil, false
		}
		break
	}
	s.space()
	if !s.ok || s.i != len(b) {
		return nil, false
	}
	return e, true
}
