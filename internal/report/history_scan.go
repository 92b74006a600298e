package report

import (
	"bytes"
	"strconv"
	"time"

	"github.com/faber-run/faber/exec"
)

// fastStepStatus reads the fields history takes of a step_status line
// without encoding/json, which takes most of the time of a history of many
// runs. It relies on the line being as exec.Event's MarshalJSON writes it:
// the common fields first (time, type, run_id, step_id, attempt, status,
// exit_code), then the payload's, each key once at its level (attempt_end
// holds no other object than resources, which holds none). A key's quoted
// name cannot occur inside a string value, where every quote is escaped.
// ok is false for a line it does not read with certainty (a string with an
// escape, a field it cannot parse): the caller then decodes it.
func fastStepStatus(line []byte, e *hEvent) bool {
	*e = hEvent{Type: exec.EvStepStatus}
	t, ok := timeField(line, `"time":"`)
	if !ok {
		return false
	}
	e.Time = t
	if e.StepID, ok = stringField(line, `"step_id":"`); !ok {
		return false
	}
	if e.Status, ok = stringField(line, `"status":"`); !ok {
		return false
	}
	body := line
	const aeKey = `"attempt_end":{`
	if ae := bytes.Index(line, []byte(aeKey)); ae >= 0 {
		rest := line[ae+len(aeKey):]
		// The first '}' closes resources when it is an object (it holds
		// none), then attempt_end follows; else it closes attempt_end.
		e1 := bytes.IndexByte(rest, '}')
		if e1 < 0 {
			return false
		}
		fields, closeAt := rest[:e1], e1+1
		var res []byte
		if r := bytes.Index(rest[:e1], []byte(`"resources":{`)); r >= 0 {
			if e1+1 >= len(rest) || rest[e1+1] != '}' {
				return false
			}
			fields, res, closeAt = rest[:r], rest[r:e1], e1+2
		}
		a := &exec.AttemptEnd{}
		n, ok := intField(fields, `"attempt":`, true)
		if !ok {
			return false
		}
		a.Attempt = int(n)
		if !bytes.Contains(fields, []byte(`"exit_code":null`)) {
			if n, ok = intField(fields, `"exit_code":`, true); !ok {
				return false
			}
			code := int(n)
			a.ExitCode = &code
		}
		if a.Cause, ok = stringField(fields, `"cause":"`); !ok {
			return false
		}
		if res != nil {
			rs := &exec.Resources{}
			for _, f := range []struct {
				key string
				to  *int64
			}{{`"memory_limit_bytes":`, &rs.MemoryLimitBytes}, {`"peak_rss_bytes":`, &rs.PeakRSSBytes}, {`"timeout_ms":`, &rs.TimeoutMs}, {`"wall_ms":`, &rs.WallMs}} {
				if *f.to, ok = intField(res, f.key, false); !ok {
					return false
				}
			}
			a.Resources = rs
		}
		e.AttemptEnd = a
		body = append(append(make([]byte, 0, len(line)), line[:ae]...), rest[closeAt:]...)
	}
	// the payload's own fields, attempt_end cut out
	if bytes.Contains(body, []byte(`"duration_ms":`)) {
		n, ok := intField(body, `"duration_ms":`, false)
		if !ok {
			return false
		}
		e.DurationMs = &n
	}
	for _, f := range []struct {
		key string
		to  **time.Time
	}{{`"started_at":"`, &e.StartedAt}, {`"finished_at":"`, &e.FinishedAt}} {
		if bytes.Contains(body, []byte(f.key)) {
			t, ok := timeField(body, f.key)
			if !ok {
				return false
			}
			*f.to = &t
		}
	}
	if i := bytes.Index(body, []byte(`"reserved":{`)); i >= 0 {
		rest := body[i:]
		end := bytes.IndexByte(rest, '}')
		if end < 0 {
			return false
		}
		n, ok := intField(rest[:end], `"memory_bytes":`, false)
		if !ok {
			return false
		}
		e.Reserved = &exec.Reserved{MemoryBytes: n}
	}
	return true
}

// stringField is the string value of key (written with its opening quote)
// in b, "" when b has no such key; ok is false for a value with an escape.
func stringField(b []byte, key string) (string, bool) {
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return "", true
	}
	rest := b[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 || bytes.IndexByte(rest[:j], '\\') >= 0 {
		return "", false
	}
	return string(rest[:j]), true
}

// timeField is the RFC 3339 time of key in b; ok is false when b has none.
func timeField(b []byte, key string) (time.Time, bool) {
	s, ok := stringField(b, key)
	if !ok || s == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

// intField is the integer value of key in b, 0 when b has none (ok unless
// required).
func intField(b []byte, key string, required bool) (int64, bool) {
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return 0, !required
	}
	rest := b[i+len(key):]
	j := 0
	for j < len(rest) && (rest[j] == '-' || rest[j] >= '0' && rest[j] <= '9') {
		j++
	}
	n, err := strconv.ParseInt(string(rest[:j]), 10, 64)
	return n, err == nil
}
