// Package evtest builds typed events for tests from loose field maps, the
// way a reader decodes them from the event log.
package evtest

import (
	"encoding/json"

	"github.com/faber-run/faber/exec"
)

// Typed returns e with fields decoded into its type's payload, as if e and
// fields had been read back from one JSON object. It panics on fields that
// do not fit the payload: that is a broken test.
func Typed(e exec.Event, fields map[string]any) exec.Event {
	b, err := e.MarshalJSON()
	if err != nil {
		panic(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		panic(err)
	}
	for k, v := range fields {
		m[k] = v
	}
	if b, err = json.Marshal(m); err != nil {
		panic(err)
	}
	var out exec.Event
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	out.Time, out.Line, out.Child = e.Time, e.Line, e.Child
	return out
}
