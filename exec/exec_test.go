package exec

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/faber-run/faber/spec"
)

func TestMatchRule(t *testing.T) {
	catchAll0 := &spec.Rule{MatchAll: true, MaxRetries: 0, Index: 0}
	ten := &spec.Rule{ExitCodes: []int{10, 11}, MaxRetries: 3, Index: 1}
	oom := &spec.Rule{ExitCodes: []int{137}, StderrMatches: regexp.MustCompile(`(?m)^OOM`), Index: 2}
	catchOOM := &spec.Rule{MatchAll: true, StderrMatches: regexp.MustCompile(`out of memory`), Index: 3}
	fh := &spec.FailureHandler{Name: "h", Rules: []*spec.Rule{catchAll0, ten, oom, catchOOM}}
	fhNoCatch := &spec.FailureHandler{Name: "n", Rules: []*spec.Rule{ten, oom, catchOOM}}
	cases := []struct {
		name       string
		fh         *spec.FailureHandler
		code       int
		resultOnly bool
		stderr     string
		want       *spec.Rule
	}{
		{"specific beats an earlier catch-all", fh, 10, false, "", ten},
		{"second code of the list", fh, 11, false, "", ten},
		{"unlisted code falls to the catch-all", fh, 3, false, "", catchAll0},
		{"stderr_matches required and matching", fhNoCatch, 137, false, "x\nOOM killer\n", oom},
		{"stderr_matches required, not matching", fhNoCatch, 137, false, "segfault", nil},
		{"catch-all with stderr_matches applies only when it matches", fhNoCatch, 1, false, "out of memory", catchOOM},
		{"catch-all with stderr_matches does not match other text", fhNoCatch, 1, false, "other", nil},
		{"result-file failure matches catch-alls only", fh, 0, true, "", catchAll0},
		{"result-file failure without a catch-all", &spec.FailureHandler{Rules: []*spec.Rule{ten}}, 0, true, "", nil},
		{"no handler", nil, 1, false, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := MatchRule(c.fh, c.code, c.resultOnly, []byte(c.stderr)); got != c.want {
				t.Fatalf("got rule %v, want %v", idx(got), idx(c.want))
			}
		})
	}
}

func idx(r *spec.Rule) any {
	if r == nil {
		return nil
	}
	return r.Index
}

func TestRetryDelay(t *testing.T) {
	fixed := &spec.Rule{Delay: 2 * time.Second}
	exp := &spec.Rule{Delay: time.Second, Backoff: spec.BackoffExponential, MaxDelay: 5 * time.Second}
	none := &spec.Rule{}
	cases := []struct {
		rule *spec.Rule
		k    int
		want time.Duration
	}{
		{fixed, 1, 2 * time.Second},
		{fixed, 5, 2 * time.Second},
		{exp, 1, time.Second},
		{exp, 2, 2 * time.Second},
		{exp, 3, 4 * time.Second},
		{exp, 4, 5 * time.Second}, // capped
		{exp, 60, 5 * time.Second},
		{none, 3, 0},
	}
	for _, c := range cases {
		if got := RetryDelay(c.rule, c.k); got != c.want {
			t.Errorf("RetryDelay(%+v, %d) = %v, want %v", c.rule, c.k, got, c.want)
		}
	}
	// Uncapped exponential backoff must not overflow into a negative wait.
	if got := RetryDelay(&spec.Rule{Delay: time.Second, Backoff: spec.BackoffExponential}, 200); got <= 0 {
		t.Errorf("uncapped exponential delay overflowed: %v", got)
	}
}

func TestErrorText(t *testing.T) {
	long := strings.Repeat("é", 600) // 1200 bytes
	cases := []struct {
		name string
		o    outcome
		want string
	}{
		{"result message wins", outcome{resultMessage: "m", stderrTail: []byte("x\n"), exitCode: 1}, "m"},
		{"last non-blank stderr line", outcome{stderrTail: []byte("a\nthe reason\r\n  \n\n"), exitCode: 1}, "the reason"},
		{"line kept as written", outcome{stderrTail: []byte("  spaced  out \n"), exitCode: 1}, "  spaced  out "},
		{"exit status", outcome{exitCode: 3}, "exit status 3"},
		{"timeout", outcome{timedOut: true, exitCode: 124, timeout: 1500 * time.Millisecond}, "timed out after 1.5s"},
		{"signal", outcome{signal: 9, exitCode: 137}, "killed by signal 9 (killed)"},
		{"clipped at a character boundary", outcome{stderrTail: []byte(long + "\n"), exitCode: 1}, strings.Repeat("é", 500)},
		{"slurm: srun's lines skipped", outcome{exec: &slurmAttempt{}, exitCode: 1, stderrTail: []byte("Field 'name' is required\nsrun: error: vm: task 0: Exited with exit code 1\n")}, "Field 'name' is required"},
		{"slurm: slurmstepd's lines skipped", outcome{exec: &slurmAttempt{}, timedOut: true, exitCode: 124, timeout: 2 * time.Second,
			stderrTail: []byte("slurmstepd-vm: error: *** STEP 5.0 ON vm CANCELLED AT 2026-11-22T10:53:32 ***\nsrun: error: vm: task 0: Terminated\n")}, "timed out after 2s"},
		{"slurm: Slurm's reason before stderr", outcome{exec: &slurmAttempt{}, execReason: "slurm preempted the job on vm", exitCode: 143, stderrTail: []byte("working\n")}, "slurm preempted the job on vm"},
		{"slurm: result message first", outcome{exec: &slurmAttempt{}, execReason: "r", resultMessage: "m", exitCode: 1}, "m"},
		{"slurm: a shell's report of faber's signal skipped", outcome{exec: &slurmAttempt{}, timedOut: true, exitCode: 124, timeout: time.Second,
			stderrTail: []byte("working\nTerminated\nsrun: error: vm: task 0: Terminated\n")}, "working"},
		{"slurm: bash's report skipped", outcome{exec: &slurmAttempt{}, stoppedBy: reasonCancel, exitCode: 143,
			stderrTail: []byte("sh: line 1: 4242 Terminated              sleep 30\n")}, "exit status 143"},
		{"slurm: zsh's report skipped", outcome{exec: &slurmAttempt{}, timedOut: true, exitCode: 124, timeout: time.Second,
			stderrTail: []byte("zsh: killed     sleep 30\nKilled\n")}, "timed out after 1s"},
		{"slurm: Terminated is the step's when Slurm ended it", outcome{exec: &slurmAttempt{}, exitCode: 143, stderrTail: []byte("Terminated\n")}, "Terminated"},
		{"local: a shell's report is the step's", outcome{timedOut: true, exitCode: 124, timeout: time.Second, stderrTail: []byte("Terminated\n")}, "Terminated"},
		{"local: srun-like lines are the step's", outcome{exitCode: 1, stderrTail: []byte("srun: mine\n")}, "srun: mine"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.o.errorText(); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

// TestStepHashSlurm: executor and slurm are part of a step's definition
// (SPEC §10), and the hash of a local step is what it was before.
func TestStepHashSlurm(t *testing.T) {
	h := func(y string) string {
		p := mustPlan(t, "name: p\nsteps:\n  - id: a\n    run: x\n"+y)
		return StepHash(p, p.Steps[0])
	}
	local := h("")
	if local != "c5fd17336c3a17d30c5b4c1b" {
		t.Errorf("the hash of a local step changed: %s", local)
	}
	if got := h("    executor: local\n"); got != local {
		t.Error("executor: local changed the hash")
	}
	slurm := h("    executor: slurm\n")
	if slurm == local {
		t.Error("executor: slurm did not change the hash")
	}
	if h("    executor: slurm\n    slurm:\n      partition: gpu\n") == slurm {
		t.Error("slurm.partition did not change the hash")
	}
}

func TestEventJSONRoundTrip(t *testing.T) {
	e := Event{Seq: 7, Time: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Type: EvStepStatus, RunID: "r", StepID: "s",
		Attempt: 2, Status: StatusFailure, ExitCode: intp(0), Data: &StepStatus{Error: "e"}}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"seq":7,"time":"2026-01-02T03:04:05.000000006Z","type":"step_status","run_id":"r","step_id":"s","attempt":2,"status":"failure","exit_code":0,"error":"e","phase":""}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	var back Event
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Seq != 7 || back.ExitCode == nil || *back.ExitCode != 0 || back.Data.(*StepStatus).Error != "e" || !back.Time.Equal(e.Time) {
		t.Fatalf("round trip lost data: %+v", back)
	}
}

func mustPlan(t *testing.T, y string) *spec.Plan {
	t.Helper()
	p, err := spec.Parse("plan.yaml", []byte(y), spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const threeSteps = `
name: p
steps:
  - id: a
    run: "true"
  - id: b
    run: "true"
  - id: c
    run: "true"
`

func states(sts ...*StepState) map[string]*StepState {
	m := map[string]*StepState{}
	for _, s := range sts {
		m[s.ID] = s
	}
	return m
}

func TestPrepareResume(t *testing.T) {
	p := mustPlan(t, threeSteps)
	prior := &Prior{Run: &RunState{}, Steps: states(
		&StepState{ID: "a", Status: StatusSuccess, Attempt: 1, Hash: StepHash(p, p.Steps[0])},
		&StepState{ID: "b", Status: StatusInProgress, Attempt: 2, PGID: 123},
		&StepState{ID: "c", Status: StatusCanceled},
	)}
	if err := PrepareResume(p, prior, ResumeOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := prior.Steps["a"].Status; got != StatusSuccess {
		t.Errorf("a: %s, want success kept", got)
	}
	if got := prior.Steps["b"]; got.Status != StatusPending || got.Attempt != 2 || got.PGID != 0 {
		t.Errorf("b: %+v, want pending (orphan), attempt kept, pgid cleared", got)
	}
	if got := prior.Steps["c"].Status; got != StatusPending {
		t.Errorf("c: %s, want pending", got)
	}
	types := []string{}
	for _, e := range prior.Events {
		types = append(types, e.Type+":"+e.StepID+":"+e.Status)
	}
	want := "run_resumed::,step_orphaned:b:,step_status:b:interrupted,step_status:b:pending,step_status:c:pending"
	if strings.Join(types, ",") != want {
		t.Errorf("events %s\nwant   %s", strings.Join(types, ","), want)
	}
}

func TestPrepareResumeEditedPlan(t *testing.T) {
	old := mustPlan(t, threeSteps)
	edited := mustPlan(t, strings.Replace(threeSteps, "  - id: b\n    run: \"true\"", "  - id: b\n    run: \"echo changed\"", 1))
	all := func() *Prior {
		return &Prior{Run: &RunState{}, Steps: states(
			&StepState{ID: "a", Status: StatusSuccess, Attempt: 1, Hash: StepHash(old, old.Steps[0])},
			&StepState{ID: "b", Status: StatusSuccess, Attempt: 1, Hash: StepHash(old, old.Steps[1])},
			&StepState{ID: "c", Status: StatusSuccess, Attempt: 1, Hash: StepHash(old, old.Steps[2])},
		)}
	}
	prior := all()
	if err := PrepareResume(edited, prior, ResumeOptions{EditedPlan: true}); err != nil {
		t.Fatal(err)
	}
	got := prior.Steps["a"].Status + "," + prior.Steps["b"].Status + "," + prior.Steps["c"].Status
	if got != "success,pending,pending" {
		t.Errorf("statuses %s, want success,pending,pending (b changed, c downstream)", got)
	}
	dropped := mustPlan(t, "name: p\nsteps:\n  - id: a\n    run: \"true\"\n")
	err := PrepareResume(dropped, all(), ResumeOptions{EditedPlan: true})
	if re, ok := err.(*ResumeError); !ok || strings.Join(re.Steps, ",") != "b,c" {
		t.Fatalf("got %v, want a ResumeError naming b, c", err)
	}
}

func TestClassify(t *testing.T) {
	p := mustPlan(t, threeSteps)
	sts := states(
		&StepState{ID: "a", Status: StatusPendingFailed, Attempt: 1, ExitCode: intp(7)},
		&StepState{ID: "b", Status: StatusPending},
		&StepState{ID: "c", Status: StatusPending},
	)
	if _, _, err := Classify(p, sts, "b", ClassifiedRetry, ""); err == nil {
		t.Fatal("classifying a pending step must fail")
	}
	changed, evs, err := Classify(p, sts, "a", ClassifiedFail, "broken")
	if err != nil {
		t.Fatal(err)
	}
	if len(changed) != 3 || sts["a"].Status != StatusFailure || sts["b"].Status != StatusCanceled || sts["c"].Classified != ClassifiedFailDependent {
		t.Fatalf("after fail: %+v %+v %+v", sts["a"], sts["b"], sts["c"])
	}
	if evs[0].Type != EvStepClassified || evs[0].Data.(*StepClassified).Reason != "broken" {
		t.Fatalf("first event %+v", evs[0])
	}
	// Failed by classification stays final on resume, with its canceled dependents.
	prior := &Prior{Run: &RunState{}, Steps: sts}
	if err := PrepareResume(p, prior, ResumeOptions{}); err != nil {
		t.Fatal(err)
	}
	if sts["a"].Status != StatusFailure || sts["b"].Status != StatusCanceled {
		t.Fatalf("classified fail did not stay final: %s %s", sts["a"].Status, sts["b"].Status)
	}
}

func TestReplay(t *testing.T) {
	lines := [][]byte{
		[]byte(`{"seq":1,"time":"2026-01-01T00:00:00Z","type":"run_started","run_id":"r","plan":"p","steps":[{"id":"a","name":"A","phase":"main","needs":[]},{"id":"b","name":"b","phase":"main","needs":["a"]}]}`),
		[]byte(`{"seq":2,"time":"2026-01-01T00:00:01Z","type":"step_status","run_id":"r","step_id":"a","attempt":1,"status":"in_progress","started_at":"2026-01-01T00:00:01Z"}`),
		[]byte(`{"seq":3,"time":"2026-01-01T00:00:02Z","type":"step_status","run_id":"r","step_id":"a","attempt":1,"status":"failure","exit_code":3,"error":"boom","duration_ms":1000,"finished_at":"2026-01-01T00:00:02Z"}`),
		[]byte(`{"seq":4,"time":"2026-01-01T00:00:03Z","type":"workflow_failed","run_id":"r","status":"failed","failed_steps":["a"]}`),
	}
	v, err := Replay(lines)
	if err != nil {
		t.Fatal(err)
	}
	if v.Run.Status != RunFailed || v.Run.Plan != "p" || v.LastSeq != 4 || len(v.Steps) != 2 {
		t.Fatalf("run %+v, %d steps", v.Run, len(v.Steps))
	}
	a := v.Steps[0]
	if a.Name != "A" || a.Status != StatusFailure || *a.ExitCode != 3 || a.Error != "boom" || a.DurationMs != 1000 || a.FinishedAt == nil {
		t.Fatalf("step a %+v", a)
	}
	if v.Steps[1].Status != StatusPending || v.Steps[1].Needs[0] != "a" {
		t.Fatalf("step b %+v", v.Steps[1])
	}
}

// TestReplayFanOutExpanded: the items of a fan-out over glob: or lines:
// come from its fanout_expanded events, placed right before its join step;
// a later expansion replaces them and drops the ones it removed.
func TestReplayFanOutExpanded(t *testing.T) {
	lines := [][]byte{
		[]byte(`{"seq":1,"time":"2026-01-01T00:00:00Z","type":"run_started","run_id":"r","plan":"p","steps":[{"id":"w","name":"w","phase":"main","needs":[]},{"id":"z","name":"z","phase":"main","needs":["w"]}]}`),
		[]byte(`{"seq":2,"time":"2026-01-01T00:00:01Z","type":"fanout_expanded","run_id":"r","step_id":"w","added":["w[a]","w[b]"],"count":2,"items":[{"id":"w[a]","name":"w[a]","phase":"main","needs":[],"fan_out":"w"},{"id":"w[b]","name":"w[b]","phase":"main","needs":[],"fan_out":"w"}],"needs":["w[a]","w[b]"],"removed":[],"source":"glob *.txt"}`),
		[]byte(`{"seq":3,"time":"2026-01-01T00:00:02Z","type":"step_status","run_id":"r","step_id":"w[b]","attempt":1,"status":"success"}`),
		[]byte(`{"seq":4,"time":"2026-01-01T00:00:03Z","type":"fanout_expanded","run_id":"r","step_id":"w","added":["w[c]"],"count":2,"items":[{"id":"w[b]","name":"w[b]","phase":"main","needs":[],"fan_out":"w"},{"id":"w[c]","name":"w[c]","phase":"main","needs":[],"fan_out":"w"}],"needs":["w[b]","w[c]"],"removed":["w[a]"],"source":"glob *.txt"}`),
	}
	v, err := Replay(lines)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, st := range v.Steps {
		got = append(got, st.ID+"="+st.Status)
	}
	if want := "w[b]=success w[c]=pending w=pending z=pending"; strings.Join(got, " ") != want {
		t.Fatalf("steps %v, want %s", got, want)
	}
	if w := v.Steps[2]; strings.Join(w.Needs, ",") != "w[b],w[c]" {
		t.Fatalf("join needs %v", w.Needs)
	}
	if c := v.Steps[1]; c.FanOut != "w" || c.Phase != "main" {
		t.Fatalf("item %+v", c)
	}
}
