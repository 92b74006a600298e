package state

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
)

// parseSummary decodes a summary as json.Unmarshal does, several times
// faster for one as writeSummary writes it (json.Marshal's field order, no
// escapes in its strings): that one is read field by field; anything else
// goes to json.Unmarshal. A listing reads thousands of summaries.
func parseSummary(b []byte) (Summary, error) {
	if s, ok := scanSummary(b); ok {
		return s, nil
	}
	var s Summary
	err := json.Unmarshal(b, &s)
	return s, err
}

// scanSummary reads a summary written by json.Marshal; ok is false for
// anything else.
func scanSummary(b []byte) (s Summary, ok bool) {
	p := &scanner{b: b, ok: true}
	p.lit(`{"run_id":`)
	s.RunID = p.str()
	p.lit(`,"plan":`)
	s.Plan = p.str()
	p.lit(`,"started_at":`)
	s.StartedAt = p.time()
	p.lit(`,"created":`)
	s.Created = p.int()
	if p.opt(`,"parent_run_id":`) {
		s.ParentRunID = p.str()
	}
	p.lit(`,"status":`)
	s.Status = p.str()
	p.lit(`,"finished_at":`)
	if !p.opt("null") {
		t := p.time()
		s.FinishedAt = &t
	}
	p.lit(`,"last_seq":`)
	s.LastSeq = p.int()
	p.lit(`,"files":`)
	if !p.opt("null") {
		p.lit("[")
		s.Files = make([]FileStamp, 0, 8)
		for i := 0; p.ok && !p.opt("]"); i++ {
			if i > 0 {
				p.lit(",")
			}
			s.Files = append(s.Files, p.stamp())
		}
	}
	if p.opt(`,"view":`) && !p.opt("null") {
		st := p.stamp()
		s.View = &st
	}
	p.lit("}")
	return s, p.ok && len(p.b) == 0
}

// scanner reads the expected tokens off b; ok turns false at the first
// that is not there.
type scanner struct {
	b  []byte
	ok bool
}

func (p *scanner) fail() {
	p.ok = false
	p.b = nil
}

func (p *scanner) opt(s string) bool {
	if p.b != nil && bytes.HasPrefix(p.b, []byte(s)) {
		p.b = p.b[len(s):]
		return true
	}
	return false
}

func (p *scanner) lit(s string) {
	if !p.opt(s) {
		p.fail()
	}
}

// quoted returns a string's bytes, quotes included; one with an escape,
// or a byte JSON would escape, is left to json.Unmarshal.
func (p *scanner) quoted() []byte {
	if len(p.b) < 2 || p.b[0] != '"' {
		p.fail()
		return nil
	}
	for i := 1; i < len(p.b); i++ {
		switch c := p.b[i]; {
		case c == '"':
			q := p.b[:i+1]
			p.b = p.b[i+1:]
			return q
		case c == '\\' || c < 0x20 || c >= 0x80:
			p.fail()
			return nil
		}
	}
	p.fail()
	return nil
}

func (p *scanner) str() string {
	q := p.quoted()
	if len(q) < 2 {
		return ""
	}
	return string(q[1 : len(q)-1])
}

func (p *scanner) time() time.Time {
	var t time.Time
	if q := p.quoted(); q == nil || t.UnmarshalJSON(q) != nil {
		p.fail()
	}
	return t
}

// int reads an integer as JSON writes one: -?(0|[1-9][0-9]*).
func (p *scanner) int() int64 {
	i := 0
	if i < len(p.b) && p.b[i] == '-' {
		i++
	}
	start := i
	for i < len(p.b) && p.b[i] >= '0' && p.b[i] <= '9' {
		i++
	}
	n, err := strconv.ParseInt(string(p.b[:i]), 10, 64)
	if err != nil || i == start || p.b[start] == '0' && i-start > 1 {
		p.fail()
		return 0
	}
	p.b = p.b[i:]
	return n
}

func (p *scanner) stamp() (f FileStamp) {
	p.lit(`{"name":`)
	f.Name = p.str()
	p.lit(`,"size":`)
	f.Size = p.int()
	p.lit(`,"mtime":`)
	f.MTime = p.int()
	p.lit("}")
	return f
}
