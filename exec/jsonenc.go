package exec

import (
	"encoding/json"
	"strconv"
	"time"
)

// The JSON of the records faber writes with every transition (a step's
// record, a step_status event's payload, a cache hit's), appended by hand
// byte for byte as encoding/json's Marshal writes it, without its
// reflection: on a 10,000-item cached fan-out, json.Marshal of these was
// some 8% of the run's CPU and 7% of what it allocated (README
// "Performance"). Fields that are rare or nested (a remediation, an
// attempt's end, outputs, a gate ...) are still encoding/json's, nested
// as it nests them. TestRecordJSONIsEncodingJSON and FuzzRecordJSON hold
// each function to json.Marshal of the same value; a field added to one of
// these types fails them until it is written here too.

// AppendStepJSON appends json.Marshal(st) to b.
func AppendStepJSON(b []byte, st *StepState) ([]byte, error) {
	if st == nil {
		return append(b, "null"...), nil
	}
	o := jsonObject{b: append(b, '{')}
	o.str("id", st.ID)
	o.str("name", st.Name)
	o.str("phase", st.Phase)
	o.str("status", st.Status)
	o.num("attempt", int64(st.Attempt))
	o.key("exit_code")
	if st.ExitCode == nil {
		o.b = append(o.b, "null"...)
	} else {
		o.b = strconv.AppendInt(o.b, int64(*st.ExitCode), 10)
	}
	o.str("error", st.Error)
	o.timeOrNull("started_at", st.StartedAt)
	o.timeOrNull("finished_at", st.FinishedAt)
	o.num("duration_ms", st.DurationMs)
	o.key("needs")
	if st.Needs == nil {
		o.b = append(o.b, "null"...)
	} else {
		o.b = append(o.b, '[')
		for i, n := range st.Needs {
			if i > 0 {
				o.b = append(o.b, ',')
			}
			o.b = appendJSONString(o.b, n)
		}
		o.b = append(o.b, ']')
	}
	o.key("remediation")
	if st.Remediation == nil {
		o.b = append(o.b, "null"...)
	} else {
		o.value(st.Remediation)
	}
	o.strOmit("fan_out", st.FanOut)
	o.opt("expanded", st.Expanded != nil, st.Expanded)
	o.strOmit("child_run_id", st.ChildRunID)
	if len(st.Attempts) > 0 { // a slice as an interface would be allocated
		o.key("attempts")
		o.value(st.Attempts)
	}
	o.opt("limits", st.Limits != nil, st.Limits)
	o.strOmit("classified", st.Classified)
	o.strOmit("hash", st.Hash)
	o.strOmit("cache_key", st.CacheKey)
	if c := st.CachedFrom; c != nil {
		o.key("cached_from")
		in := jsonObject{b: append(o.b, '{')}
		in.num("attempt", int64(c.Attempt))
		in.str("run_id", c.RunID)
		in.num("seq", c.Seq)
		o.b = append(in.b, '}')
	}
	if st.PGID != 0 {
		o.num("pgid", int64(st.PGID))
	}
	o.strOmit("pstart", st.PStart)
	o.strOmit("job", st.Job)
	if len(st.Outputs) > 0 { // a slice as an interface would be allocated
		o.key("outputs")
		o.value(st.Outputs)
	}
	o.opt("spent", st.Spent != nil, st.Spent)
	if st.BudgetWaived {
		o.key("budget_waived")
		o.b = append(o.b, "true"...)
	}
	o.opt("gate", st.Gate != nil, st.Gate)
	o.opt("phase_gate", st.PhaseGate != nil, st.PhaseGate)
	if st.AttemptReserved {
		o.key("attempt_reserved")
		o.b = append(o.b, "true"...)
	}
	if o.err != nil {
		// encoding/json's own error (a time it cannot write, say).
		j, err := json.Marshal(st)
		return append(b, j...), err
	}
	return append(o.b, '}'), nil
}

// jsonAppender is a payload that appends its own JSON, json.Marshal's.
type jsonAppender interface {
	appendJSON(b []byte) ([]byte, error)
}

// appendJSON appends json.Marshal(d) to b.
func (d *StepStatus) appendJSON(b []byte) ([]byte, error) {
	if d == nil {
		return append(b, "null"...), nil
	}
	o := jsonObject{b: append(b, '{')}
	o.opt("attempt_end", d.AttemptEnd != nil, d.AttemptEnd)
	o.strOmit("cache_key", d.CacheKey)
	o.strOmit("child_run_id", d.ChildRunID)
	if d.DurationMs != nil {
		o.num("duration_ms", *d.DurationMs)
	}
	o.strOmit("error", d.Error)
	if d.FinishedAt != nil {
		o.timeOrNull("finished_at", d.FinishedAt)
	}
	o.strOmit("handler_command", d.HandlerCommand)
	if len(d.Outputs) > 0 { // a slice as an interface would be allocated
		o.key("outputs")
		o.value(d.Outputs)
	}
	o.str("phase", d.Phase)
	o.strOmit("reason", d.Reason)
	o.opt("reserved", d.Reserved != nil, d.Reserved)
	o.opt("spent", d.Spent != nil, d.Spent)
	if d.StartedAt != nil {
		o.timeOrNull("started_at", d.StartedAt)
	}
	o.strOmit("when", d.When)
	if o.err != nil {
		j, err := json.Marshal(d)
		return append(b, j...), err
	}
	return append(o.b, '}'), nil
}

// appendJSON appends json.Marshal(d) to b.
func (d *CacheHit) appendJSON(b []byte) ([]byte, error) {
	if d == nil {
		return append(b, "null"...), nil
	}
	o := jsonObject{b: append(b, '{')}
	o.num("cached_attempt", int64(d.CachedAttempt))
	o.str("cached_run_id", d.CachedRunID)
	o.num("cached_seq", d.CachedSeq)
	o.str("key", d.Key)
	return append(o.b, '}'), nil
}

// jsonObject appends an object's fields; its caller writes the braces.
// Keys are the constant names of struct tags: ASCII with nothing to escape.
type jsonObject struct {
	b    []byte
	more bool  // a field is written: the next one takes a comma
	err  error // the first value that could not be written
}

func (o *jsonObject) key(k string) {
	if o.more {
		o.b = append(o.b, ',')
	}
	o.more = true
	o.b = append(o.b, '"')
	o.b = append(o.b, k...)
	o.b = append(o.b, '"', ':')
}

func (o *jsonObject) str(k, v string) {
	o.key(k)
	o.b = appendJSONString(o.b, v)
}

// strOmit is str for a field tagged omitempty.
func (o *jsonObject) strOmit(k, v string) {
	if v != "" {
		o.str(k, v)
	}
}

func (o *jsonObject) num(k string, v int64) {
	o.key(k)
	o.b = strconv.AppendInt(o.b, v, 10)
}

// timeOrNull writes a *time.Time as encoding/json does: null, or the
// quoted RFC 3339 text of Time.MarshalJSON, which Time.AppendText writes
// (with the same error for a year it cannot).
func (o *jsonObject) timeOrNull(k string, t *time.Time) {
	o.key(k)
	if t == nil {
		o.b = append(o.b, "null"...)
		return
	}
	b, err := t.AppendText(append(o.b, '"'))
	if err != nil {
		o.err = err
		return
	}
	o.b = append(b, '"')
}

// opt writes field k, tagged omitempty, with encoding/json when set: a
// pointer (which an interface holds without an allocation).
func (o *jsonObject) opt(k string, set bool, v any) {
	if set {
		o.key(k)
		o.value(v)
	}
}

// value writes v with encoding/json, as it writes a nested value.
func (o *jsonObject) value(v any) {
	j, err := json.Marshal(v)
	if err != nil {
		o.err = err
		return
	}
	o.b = append(o.b, j...)
}

// appendJSONString appends s quoted as encoding/json quotes it.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			// Something encoding/json escapes: let it.
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	// Printable ASCII that encoding/json writes as it is (the common case:
	// ids, types, statuses, keys, times), without its reflection and
	// allocation.
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
