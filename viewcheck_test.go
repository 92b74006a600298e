package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/state"
)

// checkViews compares, for every run of stateDir that has a current view
// (state.ReadView), what 'faber status' shows of it from that view — the
// table, with and without --all, and --json — and what every other reader
// takes from it (run.Load), with what a replay of its event log shows: they
// must be the same, byte for byte. It returns the runs it compared and the
// differences found. A run whose view stops being current meanwhile (its
// next owner opened it) is not counted.
func checkViews(stateDir string) (checked []string, problems []string) {
	ids, err := state.RunIDs(stateDir)
	if err != nil {
		return nil, []string{err.Error()}
	}
	for _, id := range ids {
		b, _, ok := state.ReadView(stateDir, id)
		if !ok {
			continue
		}
		var found []string
		differ := func(what string, got, want []byte) {
			if !bytes.Equal(got, want) {
				found = append(found, fmt.Sprintf("run %s: %s from its view differs from a replay of its log:\n--- view\n%s\n--- replay\n%s", id, what, got, want))
			}
		}
		replayed, de, err := run.LoadReplayed(stateDir, id)
		if err != nil || de != nil {
			continue // a damaged store: its log is read either way
		}
		// status --json also shows the part the run was asked to run, from its meta.
		var part *state.Part
		if m, err := state.ReadMeta(stateDir, id); err == nil {
			part = m.Part
		}
		st := run.StatusOf(replayed)
		st.Part = part
		want, _ := json.MarshalIndent(st, "", "  ")
		compact, _, err := run.StatusJSON(stateDir, id)
		if err != nil {
			found = append(found, fmt.Sprintf("run %s: status --json: %v", id, err))
		}
		differ("status --json", run.IndentJSON(nil, compact), want)
		full, _, _, err := run.Load(stateDir, id)
		if err != nil {
			found = append(found, fmt.Sprintf("run %s: load: %v", id, err))
		} else {
			st := run.StatusOf(full)
			st.Part = part
			got, _ := json.MarshalIndent(st, "", "  ")
			differ("the whole view (run.Load)", got, want)
		}
		brief, _, err := run.LoadBrief(stateDir, id)
		if err != nil {
			found = append(found, fmt.Sprintf("run %s: brief: %v", id, err))
		} else {
			for _, all := range []bool{false, true} {
				differ(fmt.Sprintf("status (all %v)", all), statusText(stateDir, brief, all), statusText(stateDir, replayed, all))
			}
		}
		if b2, _, ok := state.ReadView(stateDir, id); !ok || !bytes.Equal(b, b2) {
			continue // changed meanwhile
		}
		checked = append(checked, id)
		problems = append(problems, found...)
	}
	return checked, problems
}

// statusText is what 'faber status' prints of a view, without colour.
func statusText(stateDir string, v *exec.View, all bool) []byte {
	var out bytes.Buffer
	g := &Globals{StateDir: stateDir, NoColor: true, stdout: &out, stderr: io.Discard}
	if err := printStatus(g, v, all, ""); err != nil {
		return []byte(err.Error())
	}
	return out.Bytes()
}
