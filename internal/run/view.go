package run

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/state"
)

// Load rebuilds a run from its event log, the way every reader does: it
// never opens the store of a run that another process owns. A run whose
// owner closed it cleanly comes from the view its owner left (state.ReadView)
// while that is current, without a replay. A run whose owner died while it
// was in progress shows as interrupted (nothing is written). It also returns
// the damage of the run's store found on the way (nil if none): the view
// then comes from events.jsonl.
func Load(stateDir, runID string) (*exec.View, state.Meta, *state.DamagedError, error) {
	meta, err := state.ReadMeta(stateDir, runID)
	if err != nil {
		return nil, meta, nil, StoreError(err, runID, stateDir)
	}
	if f, ok := storedView(stateDir, runID); ok {
		if v, err := f.full(); err == nil {
			settle(v, meta, stateDir, runID)
			return v, meta, nil, nil
		}
	}
	return loadReplayed(stateDir, runID, meta)
}

// LoadReplayed is Load without the stored view: a replay of the event log,
// what every reader did before views (the tests compare the two).
func LoadReplayed(stateDir, runID string) (*exec.View, *state.DamagedError, error) {
	meta, err := state.ReadMeta(stateDir, runID)
	if err != nil {
		return nil, nil, StoreError(err, runID, stateDir)
	}
	v, _, de, err := loadReplayed(stateDir, runID, meta)
	return v, de, err
}

func loadReplayed(stateDir, runID string, meta state.Meta) (*exec.View, state.Meta, *state.DamagedError, error) {
	log, err := state.ReadLog(stateDir, runID, 0)
	if err != nil {
		if errors.Is(err, state.ErrDamaged) {
			return nil, meta, nil, StoreError(err, runID, stateDir)
		}
		return nil, meta, nil, stateProblem(fmt.Errorf("cannot read run %s: %w", runID, err))
	}
	v, err := exec.Replay(log.Events)
	if err != nil {
		return nil, meta, nil, stateProblem(fmt.Errorf("run %s: event log unreadable: %w", runID, err))
	}
	settle(v, meta, stateDir, runID)
	return v, meta, log.Damaged, nil
}

// settle completes a view from the event log with what the log cannot
// tell: the run's metadata when it has no run_started yet, and that a run in
// progress whose owner is gone was interrupted. It reports whether it
// changed the view.
func settle(v *exec.View, meta state.Meta, stateDir, runID string) bool {
	changed := false
	if v.Run.RunID == "" {
		v.Run.RunID = meta.RunID
		v.Run.Plan = meta.Plan
		v.Run.StartedAt = meta.StartedAt
		v.Run.Status = exec.RunInProgress
		changed = true
	}
	if v.Run.Status == exec.RunInProgress {
		if o, err := state.OwnerOf(stateDir, runID); err == nil && !o.Alive {
			v.Run.Status = exec.RunInterrupted
			changed = true
		}
	}
	return changed
}

// storedView is the run's view file while it is current (state.ReadView).
func storedView(stateDir, runID string) (*viewFile, bool) {
	b, sum, ok := state.ReadView(stateDir, runID)
	if !ok {
		return nil, false
	}
	f, err := parseView(b)
	if err != nil || f.lastSeq != sum.LastSeq {
		return nil, false
	}
	return f, true
}

// storedTable is storedView without the JSON: the view file is read up
// to the end of its table.
func storedTable(stateDir, runID string) (*viewFile, bool) {
	var f *viewFile
	head, n := 0, 0
	b, sum, ok := state.ReadViewHead(stateDir, runID, func(b []byte) int {
		var err error
		if f, head, n, err = parseViewHead(b); err != nil {
			return -1
		}
		return head + n
	})
	if !ok || f.lastSeq != sum.LastSeq { // ok: more parsed the header, and b is head+n bytes
		return nil, false
	}
	f.table = b[head:]
	return f, true
}

// LoadBrief is Load for 'faber status': a run closed cleanly comes from
// its view file's table, so each step holds only what the status table
// shows of it (see appendTable); any other run is Load's, whole.
func LoadBrief(stateDir, runID string) (*exec.View, *state.DamagedError, error) {
	if f, ok := storedTable(stateDir, runID); ok {
		if v, err := f.brief(); err == nil {
			if meta, err := state.ReadMeta(stateDir, runID); err == nil {
				settle(v, meta, stateDir, runID)
				return v, nil, nil
			}
		}
	}
	v, _, de, err := Load(stateDir, runID)
	return v, de, err
}

// StatusJSON is the JSON object 'faber status --json' prints (Status),
// unindented: as its view file holds it for a run closed cleanly whose
// view needs nothing settled (settle), else Load's, marshaled.
func StatusJSON(stateDir, runID string) ([]byte, *state.DamagedError, error) {
	if f, ok := storedView(stateDir, runID); ok {
		if v, r := f.head(); r.err == nil {
			if meta, err := state.ReadMeta(stateDir, runID); err == nil && !settle(v, meta, stateDir, runID) {
				if b, ok := withPart(f.json, meta.Part); ok {
					return b, nil, nil
				}
			}
		}
	}
	st, de, err := loadStatus(stateDir, runID)
	if err != nil {
		return nil, de, err
	}
	b, err := json.Marshal(WithUsage(stateDir, st))
	if err != nil {
		return nil, de, stateProblem(err)
	}
	return b, de, nil
}

// withPart is the status JSON of a view file with the run's part, where
// json.Marshal(Status) puts it: right before the steps (the view file
// holds none: the part is the meta's).
func withPart(b []byte, part *state.Part) ([]byte, bool) {
	if part == nil {
		return b, true
	}
	return beforeSteps(b, "part", part)
}

// beforeSteps is the status JSON b (unindented) with "key": v put right
// before its steps, where json.Marshal puts a field declared before
// Steps; ok is false when b has no steps of its own or v does not
// marshal.
func beforeSteps(b []byte, key string, v any) ([]byte, bool) {
	at := topKey(b, `,"steps":`)
	vj, err := json.Marshal(v)
	if at < 0 || err != nil {
		return nil, false
	}
	out := make([]byte, 0, len(b)+len(key)+len(vj)+4)
	out = append(out, b[:at]...)
	out = append(out, `,"`+key+`":`...)
	out = append(out, vj...)
	return append(out, b[at:]...), true
}

// View is Load without the store's damage.
func View(stateDir, runID string) (*exec.View, error) {
	v, _, _, err := Load(stateDir, runID)
	return v, err
}

// Status is the object 'faber status --json' prints and the MCP tool
// get_run_status returns (SPEC §1).
type Status struct {
	exec.RunState
	// Part is the part of its plan the run was asked to run (faber run
	// PLAN STEP... --from STEP), from its meta; nil for the whole plan.
	Part  *state.Part       `json:"part,omitempty"`
	Steps []*exec.StepState `json:"steps"`
}

// StatusOf is the status of a view. The event log never carries the
// internal fields (hash, process group), so they stay empty.
func StatusOf(v *exec.View) Status {
	steps := v.Steps
	if steps == nil {
		steps = []*exec.StepState{}
	}
	return Status{RunState: v.Run, Steps: steps}
}

// PendingStep is one step awaiting classification, as `pending --json`
// prints it and the MCP tool returns it.
type PendingStep struct {
	StepID     string   `json:"step_id"`
	Name       string   `json:"name"`
	Phase      string   `json:"phase"`
	Attempt    int      `json:"attempt"`
	ExitCode   *int     `json:"exit_code"`
	Error      string   `json:"error"`
	Hint       string   `json:"hint"`
	StderrFile string   `json:"stderr_file"`
	StderrTail []string `json:"stderr_tail"`
	// Cause (oom, timeout), peak memory and memory limit of the failed
	// attempt, so that an OOM is told from a bug (README "Resources").
	Cause            string `json:"cause,omitempty"`
	PeakRSSBytes     int64  `json:"peak_rss_bytes,omitempty"`
	MemoryLimitBytes int64  `json:"memory_limit_bytes,omitempty"`
	// PeakUpperBound: the peak is not the attempt's own (no cgroup, no
	// accounting) but an upper bound of it (Resources.PeakExact).
	PeakUpperBound bool `json:"peak_upper_bound,omitempty"`
	// Budgets, on a step that a spent budget failed (cause budget), are
	// the budgets that cover it with their spending (README "Budgets").
	Budgets []exec.BudgetLine `json:"budgets,omitempty"`
}

// GateStep is one step awaiting approval (README "Approval gates"), as
// `pending --json` and the MCP tool list_pending_failed_jobs give it
// (kind approval).
type GateStep struct {
	Kind   string `json:"kind"` // approval
	StepID string `json:"step_id"`
	Name   string `json:"name"`
	Phase  string `json:"phase"`
	// Gate is the phase's name when the gate is its phase's (decide it
	// with faber approve RUN PHASE), else "".
	Gate     string     `json:"gate,omitempty"`
	Prompt   string     `json:"prompt"`
	OpenedAt *time.Time `json:"opened_at"`
	Deadline *time.Time `json:"deadline,omitempty"`
	// Decided is approved or rejected when a decision is recorded and the
	// next resume applies it; "" while it waits for one.
	Decided string `json:"decided,omitempty"`
}

// GatesOf lists the steps of a run's view that await approval.
func GatesOf(v *exec.View) []GateStep {
	out := []GateStep{}
	for _, st := range v.Steps {
		if st.Status != exec.StatusAwaitingApproval {
			continue
		}
		g, gate := st.Gate, ""
		if pg := st.PhaseGate; pg != nil && (g == nil || pg.State == exec.GateOpen || pg.Recorded) {
			g, gate = pg, st.Phase
		}
		p := GateStep{Kind: "approval", StepID: st.ID, Name: st.Name, Phase: st.Phase, Gate: gate}
		if g != nil {
			p.Prompt, p.OpenedAt, p.Deadline = g.Prompt, g.OpenedAt, g.Deadline
			if g.State != exec.GateOpen {
				p.Decided = g.State
			}
		}
		out = append(out, p)
	}
	return out
}

// Pending lists a run's pending_failed steps with their stderr tails.
func Pending(stateDir, runID string) ([]PendingStep, error) {
	v, err := View(stateDir, runID)
	if err != nil {
		return nil, err
	}
	return PendingOf(stateDir, runID, v), nil
}

// Masker masks the run's secrets (spec.Plan.Secrets) in what readers show
// of it from its logs; nil when it has none. The event log is masked already.
func Masker(stateDir, runID string) *exec.Masker {
	meta, err := state.ReadMeta(stateDir, runID)
	if err != nil {
		return nil
	}
	return exec.NewMaskerOf(meta.Secrets)
}

// PendingOf lists the pending_failed steps of a run's view.
func PendingOf(stateDir, runID string, v *exec.View) []PendingStep {
	out := []PendingStep{}
	runDir := state.RunDir(stateDir, runID)
	mask := Masker(stateDir, runID)
	for _, st := range v.Steps {
		if st.Status != exec.StatusPendingFailed {
			continue
		}
		path := exec.LogPath(runDir, st.ID, "attempt", st.Attempt, "err")
		tail := TailLines(path, 50)
		for i := range tail {
			tail[i] = mask.String(tail[i])
		}
		p := PendingStep{
			StepID: st.ID, Name: st.Name, Phase: st.Phase, Attempt: st.Attempt, ExitCode: st.ExitCode,
			Error: st.Error, Hint: exec.Hint(st.Error + "\n" + strings.Join(tail, "\n")), StderrFile: path, StderrTail: tail,
		}
		addResources(&p, st)
		out = append(out, p)
	}
	addBudgets(stateDir, runID, v, out)
	return out
}

// TailLines returns the last n lines of a file (at most its last 256 KiB).
func TailLines(path string, n int) []string {
	f, err := os.Open(path)
	if err != nil {
		return []string{}
	}
	defer f.Close()
	const max = 256 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		f.Seek(fi.Size()-max, 0)
	}
	var buf bytes.Buffer
	buf.ReadFrom(f)
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return []string{}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

// FirstLine is s up to its first line break, marked " …" where it goes on:
// one line of an error for a table or a summary.
func FirstLine(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// StatusOfRun is the status of a run, rebuilt from its event log.
func StatusOfRun(stateDir, runID string) (Status, error) {
	st, _, err := loadStatus(stateDir, runID)
	return st, err
}

// loadStatus is the status of a run as Load rebuilds it, with the part of
// its plan its meta names.
func loadStatus(stateDir, runID string) (Status, *state.DamagedError, error) {
	v, meta, de, err := Load(stateDir, runID)
	if err != nil {
		return Status{}, de, err
	}
	st := StatusOf(v)
	st.Part = meta.Part
	return st, de, nil
}
