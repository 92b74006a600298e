//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/model"
	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/state"
)

// TestContract runs random plans (internal/model's Gen) through the real
// binary and checks each against the model of the contract: the outcome —
// every step's status, attempt, handler and recovery runs, and each
// session's exit code — must be one the model allows, and the event log
// must keep the invariants that need no model (checkInvariants).
//
// FABER_CONTRACT_N sets how many plans (default 80, a fixed seed range, so
// go test ./... is repeatable); FABER_CONTRACT_SEED=N runs that one plan
// (from a failure's message); FABER_CONTRACT_FROM=N starts the seed range
// elsewhere (the soak in .ci/run draws a new one); FABER_CONTRACT_ALL=1
// reports every disagreement, unshrunk, instead of stopping at the first;
// FABER_CONTRACT_EVENTS=1 adds every run's event log to a disagreement.
func TestContract(t *testing.T) {
	if testing.Short() {
		t.Skip("random plans: not in -short mode")
	}
	n, from := 80, uint64(1)
	if raceEnabled {
		// Every faber it starts is this race-instrumented binary, several
		// times slower: the race detector needs a few plans, not the soak.
		n = 12
	}
	if v := os.Getenv("FABER_CONTRACT_N"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	if v := os.Getenv("FABER_CONTRACT_FROM"); v != "" {
		from, _ = strconv.ParseUint(v, 10, 64)
	}
	if v := os.Getenv("FABER_CONTRACT_SEED"); v != "" {
		from, _ = strconv.ParseUint(v, 10, 64)
		n = 1
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for seed := from; seed < from+uint64(n); seed++ {
		c := model.Gen(seed)
		allowed, err := model.Outcomes(c.Model())
		if errors.Is(err, model.ErrTooBig) {
			continue
		}
		if err != nil {
			t.Fatalf("seed %d: model: %v", seed, err)
		}
		ran++
		how := ""
		if c.Batch {
			how = ", on (fake) " + fakeEngineOf(c).title + " in batch mode"
		}
		t.Logf("seed %d: %d steps%s", seed, len(c.StepIDs()), how)
		if msg := checkCase(t, self, c, allowed); msg != "" {
			if os.Getenv("FABER_CONTRACT_ALL") != "" {
				// Survey mode: every disagreement, unshrunk.
				t.Errorf("seed %d disagrees with the contract:\n%s\n--- plan.yaml\n%s--- flags: %s\n%s", seed, msg, c.YAML(), strings.Join(c.Args()[2:], " "), codesText(c))
				continue
			}
			small, smallMsg := shrinkCase(t, self, c, msg)
			t.Fatalf("seed %d disagrees with the contract (reproduce: FABER_CONTRACT_SEED=%d go test -run TestContract .)\n%s\n"+
				"shrunk to:\n--- plan.yaml\n%s--- flags: %s\n--- codes (line N: attempt N; r = result-file failure; then p = publishes v, b = a malformed outputs file)\n%s%s",
				seed, seed, msg, small.YAML(), strings.Join(small.Args()[2:], " "), codesText(small), smallMsg)
		}
	}
	if ran < n/2 {
		t.Fatalf("only %d of %d plans were small enough for the model", ran, n)
	}
}

// fakeEngineOf is the fake batch system of Batch case c.
func fakeEngineOf(c *model.Case) *fakeEngine {
	if c.BatchEngine() == "sge" {
		return fakeSgeEngine
	}
	return fakeSlurmEngine
}

func codesText(c *model.Case) string {
	var b strings.Builder
	files := c.Files()
	var names []string
	for _, id := range c.StepIDs() {
		for _, name := range []string{"codes/" + id, "hcodes/" + id} {
			if _, ok := files[name]; ok {
				names = append(names, name)
			}
		}
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(&b, "%s: %s\n", name, strings.ReplaceAll(strings.TrimSpace(files[name]), "\n", " "))
	}
	return b.String()
}

// shrinkCase cuts a failing case down, greedily, to one that still fails.
func shrinkCase(t *testing.T, self string, c *model.Case, msg string) (*model.Case, string) {
	deadline := time.Now().Add(3 * time.Minute)
	for progress := true; progress && time.Now().Before(deadline); {
		progress = false
		for _, d := range c.Shrinks() {
			allowed, err := model.Outcomes(d.Model())
			if err != nil {
				continue
			}
			if m := checkCase(t, self, d, allowed); m != "" {
				c, msg, progress = d, m, true
				break
			}
		}
	}
	return c, msg
}

// checkCase runs one case through faber, as its policy says (classify,
// resume), and returns what disagrees with the contract ("" for nothing).
func checkCase(t *testing.T, self string, c *model.Case, allowed map[string]model.Outcome) string {
	dir, err := os.MkdirTemp("", "faber-contract-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	for name, text := range c.Files() {
		p := filepath.Join(dir, name)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
	}
	stateDir := filepath.Join(dir, ".faber")
	// A Batch case runs against the fake of its engine (fakeslurm_test.go,
	// fakesge_test.go): its commands first in PATH, its jobs' state in
	// dir/fake<engine>.
	var batchEnv []string
	engine := fakeEngineOf(c)
	jobs := filepath.Join(dir, "fake"+engine.executor)
	if c.Batch {
		bin, err := engine.bin(dir, self)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(jobs, 0o755); err != nil {
			t.Fatal(err)
		}
		batchEnv = []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), engine.envVar + "=" + jobs}
		defer endFakeJobs(jobs)
	}
	// faber runs faber; with kill > 0 it kills it (SIGKILL) once it has
	// printed that many lines, and reports exit code -9.
	faber := func(kill int, args ...string) (int, string) {
		cmd := faberCmd(self, dir, stateDir, args...)
		cmd.Env = append(cmd.Env, batchEnv...)
		out := &lineCounter{kill: kill, killed: make(chan struct{})}
		cmd.Stdout, cmd.Stderr = out, out
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		select {
		case <-out.killed:
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-done
			return -9, out.String()
		case err := <-done:
			var ee *osexec.ExitError
			if errors.As(err, &ee) {
				return ee.ExitCode(), out.String()
			}
			return 0, out.String()
		case <-time.After(2 * time.Minute):
			_ = cmd.Process.Kill()
			<-done
			return -1, out.String() + "\n(faber did not end in 2 minutes: killed)"
		}
	}
	args := c.Args()
	// A resume takes the flags, not the part: the run keeps its own.
	flags := args[4 : len(args)-len(c.PartArgs())]
	var codes []int
	var runID string
	var transcript strings.Builder
	killed, grown := false, false
	closedClean := false // the last session closed the run: it left a view
	for session := 0; ; session++ {
		kill := 0
		if session == 0 && !killed {
			kill = c.Kill
		}
		code, out := faber(kill, args...)
		fmt.Fprintf(&transcript, "$ faber %s  -> exit %d\n", strings.Join(args, " "), code)
		// Whatever view is current, killed or not, shows what a replay
		// of the log shows (a crash must never leave one that does not).
		if _, vp := checkViews(stateDir); len(vp) > 0 {
			return transcript.String() + strings.Join(vp, "\n")
		}
		closedClean = code != -9
		if code == -9 {
			// Killed: resume, as a user would, without counting a session.
			killed = true
			t.Logf("seed %d: faber killed after %d lines", c.Seed, c.Kill)
			if runID == "" {
				runID = newestTopRun(stateDir, "")
			}
			if runID == "" {
				// Killed before the run was created: run again.
				session--
				continue
			}
			session--
			if c.StopDead {
				if msg := stopDead(t, self, dir, stateDir, runID, faber, &transcript); msg != "" {
					return transcript.String() + msg
				}
			}
			args = append([]string{"resume", runID, "--ui", "json"}, flags...)
			continue
		}
		if killed && code == 4 && strings.Contains(out, "already succeeded") {
			// The kill came after the run's last commit: nothing to resume.
			code = 0
			closedClean = false // no session closed it after the kill
		}
		if code != 0 && code != 1 && code != 3 {
			return fmt.Sprintf("faber exited %d:\n%s", code, out)
		}
		codes = append(codes, code)
		if runID == "" {
			if runID = newestTopRun(stateDir, ""); runID == "" {
				return "no run was created:\n" + out
			}
		}
		if session+1 >= max(c.Sessions, 1) {
			break
		}
		if code == 3 {
			st, err := readStatus(self, dir, stateDir, runID)
			if err != nil {
				return err.Error()
			}
			// One decision per gate: a phase's entry steps wait at one,
			// a fan-out's items at one, which deciding any of the steps
			// at it decides (README "Approval gates"); the user's
			// decision is drawn for the phase's name, the fan-out's id.
			decided := map[string]bool{}
			for _, s := range st.Steps {
				if s.Status != "awaiting_approval" {
					continue
				}
				gate := c.GateOf(s.ID)
				if s.PhaseGate != nil && s.PhaseGate.State == "open" {
					gate = c.PhaseOf(s.ID)
				}
				if decided[gate] {
					continue
				}
				decided[gate] = true
				// By the step, or (every other seed and session) by the
				// gate's own name: the fan-out's id, the phase's name.
				name := []string{s.ID}
				if gate != s.ID && (c.Seed+uint64(session))%2 == 1 {
					name = []string{gate}
					if s.PhaseGate != nil && s.PhaseGate.State == "open" {
						name = append(name, "--phase")
					}
				}
				how := append([]string{"approve", runID}, name...)
				if !c.Approve(gate, session+1) {
					how = append(append([]string{"reject", runID}, name...), "--reason", "contract test")
				}
				ccode, cout := faber(0, how...)
				fmt.Fprintf(&transcript, "$ faber %s -> exit %d\n", strings.Join(how, " "), ccode)
				if ccode != 0 {
					return fmt.Sprintf("faber %s exited %d:\n%s", strings.Join(how, " "), ccode, cout)
				}
			}
			for _, s := range st.Steps {
				if s.Status != "pending_failed" {
					continue
				}
				how := "--fail"
				if c.ClassifyRetry(s.ID, session+1) {
					how = "--retry"
				}
				ccode, cout := faber(0, "classify", runID, s.ID, how, "--reason", "contract test")
				fmt.Fprintf(&transcript, "$ faber classify %s %s -> exit %d\n", s.ID, how, ccode)
				if ccode != 0 {
					return fmt.Sprintf("classify %s %s exited %d:\n%s", s.ID, how, ccode, cout)
				}
			}
		} else if code != 1 || !c.ResumeFailed {
			break
		}
		if !grown {
			// The user adds files to the glob fan-outs' directories before
			// resuming (the model's Grown items).
			grown = true
			for _, f := range c.GrowFiles() {
				_ = os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755)
				if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
					return err.Error()
				}
				fmt.Fprintf(&transcript, "$ touch %s\n", f)
			}
		}
		args = append([]string{"resume", runID, "--ui", "json"}, flags...)
	}
	runs := []string{runID}
	rerunClean := true // the second run's last session closed it
	if c.Rerun {
		// The plan again, as a new run: what succeeded with inputs is cached.
		code, out := faber(c.RerunKill, c.Args()...)
		fmt.Fprintf(&transcript, "$ faber %s  -> exit %d (the second run)\n", strings.Join(c.Args(), " "), code)
		second := newestTopRun(stateDir, runID)
		if code == -9 {
			// Killed (RerunKill): resume it, or run it again when it was
			// killed before it was created. The resume reads back the
			// records of the hits before the kill.
			killed = true
			t.Logf("seed %d: the second run killed after %d lines", c.Seed, c.RerunKill)
			again := c.Args()
			if second != "" {
				again = append([]string{"resume", second, "--ui", "json"}, flags...)
			}
			code, out = faber(0, again...)
			fmt.Fprintf(&transcript, "$ faber %s  -> exit %d (the second run, after the kill)\n", strings.Join(again, " "), code)
			if second != "" && code == 4 && strings.Contains(out, "already succeeded") {
				code, rerunClean = 0, false // the kill came after its last commit
			}
			second = newestTopRun(stateDir, runID)
		}
		if code != 0 && code != 1 && code != 3 {
			return fmt.Sprintf("faber exited %d:\n%s", code, out)
		}
		codes = append(codes, code)
		if second == "" {
			return "the second run was not created:\n" + out
		}
		runs = append(runs, second)
	}
	// Each run that a session closed cleanly is read from its view, which
	// shows what a replay of its log shows.
	checked, vp := checkViews(stateDir)
	if len(vp) > 0 {
		return transcript.String() + strings.Join(vp, "\n")
	}
	for i, id := range runs {
		if ((i > 0 && rerunClean) || (i == 0 && closedClean)) && !slices.Contains(checked, id) {
			return transcript.String() + fmt.Sprintf("run %s was closed cleanly but has no current view", id)
		}
	}
	trace, _ := os.ReadFile(filepath.Join(dir, "trace.log"))
	if c.Batch {
		// Every attempt ran as a batch job: s.sh logs each attempt once,
		// and only a job runs it (handlers and recovery scripts, which
		// run here, log other lines).
		attempts := strings.Count("\n"+string(trace), "\nattempt ")
		if n := len(fakeJobs(jobs)); attempts > n {
			return transcript.String() + fmt.Sprintf("%d attempts ran but only %d %s jobs were submitted", attempts, n, engine.title)
		}
	}
	got := model.Outcome{Codes: codes}
	var allEvs [][]ev
	for i, id := range runs {
		st, err := readStatus(self, dir, stateDir, id)
		if err != nil {
			return err.Error()
		}
		evs, err := readEvents(stateDir, id)
		if err != nil {
			return err.Error()
		}
		allEvs = append(allEvs, evs)
		prefix := ""
		if i > 0 {
			prefix = fmt.Sprintf("run%d:", i+1)
		}
		got.Steps = append(got.Steps, observed(c, prefix, st, evs)...)
	}
	var problems []string
	if _, ok := allowed[got.Key()]; !ok && !killed {
		var b strings.Builder
		fmt.Fprintf(&b, "faber did:\n%s", got)
		keys := model.Keys(allowed)
		fmt.Fprintf(&b, "the model allows %d outcomes, e.g.:\n", len(keys))
		for i, k := range keys {
			if i == 3 {
				break
			}
			b.WriteString(k)
		}
		problems = append(problems, b.String())
	}
	for _, evs := range allEvs {
		problems = append(problems, checkInvariants(c, evs, string(trace))...)
	}
	if !killed {
		for _, id := range runs {
			problems = append(problems, checkNotified(c, stateDir, id)...)
		}
	}
	// Last, as it takes each run's store: what a resume would read back.
	for _, id := range runs {
		problems = append(problems, checkRecords(stateDir, id)...)
	}
	if len(problems) == 0 {
		return ""
	}
	if os.Getenv("FABER_CONTRACT_EVENTS") != "" {
		// Every run's event log, for a close look at one seed.
		for i, id := range runs {
			lines, _ := state.ReadEvents(stateDir, id, 0)
			fmt.Fprintf(&transcript, "--- events of run %d\n", i+1)
			for _, l := range lines {
				transcript.Write(l)
				transcript.WriteByte('\n')
			}
		}
	}
	return transcript.String() + strings.Join(problems, "\n")
}

// checkRecords reads a finished run's step records as a resume reads them
// (run.LoadRecords: a cache hit's is rebuilt from its events) and checks
// them against its event log: a step whose last step_status is cached
// reads back as that very hit, and only such a step reads back as cached.
func checkRecords(stateDir, runID string) []string {
	store, err := run.Open(stateDir, runID, state.Options{})
	if err != nil {
		return []string{fmt.Sprintf("run %s: cannot take its store: %v", runID, err)}
	}
	defer store.Close()
	_, prior, err := run.LoadRecords(store, runID, stateDir)
	if err != nil {
		return []string{fmt.Sprintf("run %s: its records do not read back: %v", runID, err)}
	}
	lines, err := state.ReadEvents(stateDir, runID, 0)
	if err != nil {
		return []string{err.Error()}
	}
	// The log as exec decodes it: each step's last step_status and
	// step_cache_hit.
	last, hits := map[string]*exec.StepStatus{}, map[string]*exec.CacheHit{}
	status := map[string]string{}
	for _, l := range lines {
		var e exec.Event
		if err := json.Unmarshal(l, &e); err != nil {
			return []string{err.Error()}
		}
		switch d := e.Data.(type) {
		case *exec.StepStatus:
			last[e.StepID], status[e.StepID] = d, e.Status
		case *exec.CacheHit:
			hits[e.StepID] = d
		}
	}
	var out []string
	for id, st := range prior.Steps {
		if (st.Status == "cached") != (status[id] == "cached") {
			out = append(out, fmt.Sprintf("run %s: step %s reads back as %s; its last step_status says %q", runID, id, st.Status, status[id]))
			continue
		}
		if status[id] != "cached" {
			continue
		}
		e, h := last[id], hits[id]
		if h == nil {
			out = append(out, fmt.Sprintf("run %s: cached step %s has no step_cache_hit", runID, id))
			continue
		}
		want := exec.CachedFrom{Attempt: h.CachedAttempt, RunID: h.CachedRunID, Seq: h.CachedSeq}
		if st.CachedFrom == nil || *st.CachedFrom != want || st.CacheKey != h.Key || st.CacheKey != e.CacheKey ||
			st.StartedAt == nil || e.StartedAt == nil || !st.StartedAt.Equal(*e.StartedAt) {
			out = append(out, fmt.Sprintf("run %s: cached step %s reads back as %+v (from %+v), not its hit %+v at %v", runID, id, st, st.CachedFrom, want, e.StartedAt))
		}
	}
	for id, s := range status {
		if s == "cached" && prior.Steps[id] == nil {
			out = append(out, fmt.Sprintf("run %s: cached step %s has no record", runID, id))
		}
	}
	return out
}

// lineCounter collects a process's output and closes killed once it has
// seen kill lines (kill > 0).
type lineCounter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	lines  int
	kill   int
	killed chan struct{}
}

func (l *lineCounter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	if l.kill > 0 && l.lines < l.kill {
		l.lines += bytes.Count(p, []byte("\n"))
		if l.lines >= l.kill {
			close(l.killed)
		}
	}
	return len(p), nil
}

func (l *lineCounter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

type statusOut struct {
	Status string `json:"status"`
	Steps  []struct {
		ID      string `json:"id"`
		Status  string `json:"status"`
		Attempt int    `json:"attempt"`
		// PhaseGate is where its phase's gate stands for it.
		PhaseGate *struct {
			State string `json:"state"`
		} `json:"phase_gate"`
	} `json:"steps"`
}

func readStatus(self, dir, stateDir, runID string) (*statusOut, error) {
	cmd := faberCmd(self, dir, stateDir, "status", runID, "--json")
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("faber status: %v", err)
	}
	var st statusOut
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("faber status: %v", err)
	}
	return &st, nil
}

// ev is an event as the invariants read it.
type ev struct {
	Seq     int64  `json:"seq"`
	Type    string `json:"type"`
	StepID  string `json:"step_id"`
	Attempt int    `json:"attempt"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	// Reserved is what an attempt's start reserved (README "Capacity and
	// requests"); nil when nothing.
	Reserved *struct {
		CPUs  int      `json:"cpus"`
		Pools []string `json:"pools"`
	} `json:"reserved"`
}

func readEvents(stateDir, runID string) ([]ev, error) {
	lines, err := state.ReadEvents(stateDir, runID, 0)
	if err != nil {
		return nil, err
	}
	out := make([]ev, 0, len(lines))
	for _, l := range lines {
		var e ev
		if err := json.Unmarshal(l, &e); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// newestTopRun is the newest top-level run (no parent) of the state dir other
// than not ("" if there is none).
func newestTopRun(stateDir, not string) string {
	metas, _ := state.List(stateDir)
	for _, m := range metas {
		if m.ParentRunID == "" && m.RunID != not {
			return m.RunID
		}
	}
	return ""
}

// observed is what a run did, in the model's terms.
func observed(c *model.Case, prefix string, st *statusOut, evs []ev) []model.StepOut {
	handlers, recoveries := map[string]int{}, map[string]int{}
	for _, e := range evs {
		switch e.Type {
		case "step_handler_invoked":
			handlers[e.StepID]++
		case "recovery_script_finished":
			recoveries[e.StepID]++
		}
	}
	byID := map[string]int{}
	for i, s := range st.Steps {
		byID[s.ID] = i
	}
	var out []model.StepOut
	for _, id := range c.StepIDs() {
		so := model.StepOut{ID: prefix + id, Status: "(missing)", Handlers: handlers[id], Recoveries: recoveries[id]}
		if i, ok := byID[id]; ok {
			so.Status, so.Attempt = st.Steps[i].Status, st.Steps[i].Attempt
		}
		out = append(out, so)
	}
	return out
}

// checkInvariants checks what must hold of any run, with no model: seq is
// 1..n across sessions; no success without an exit 0 of that attempt; no
// step starts before each of its needs is settled as the contract
// requires; no attempt starts after a cancel stop (the end step aside);
// every attempt start has an end or an orphan record; a success is never
// run again.
func checkInvariants(c *model.Case, evs []ev, trace string) []string {
	var bad []string
	p := c.Model()
	idx := map[string]int{}
	for i, s := range p.Steps {
		idx[s.ID] = i
	}
	// A sub-plan step runs faber, not s.sh: its success is its child run's
	// (the model checks that outcome).
	children := map[string]bool{}
	for _, ph := range c.Phases {
		for _, s := range ph.Steps {
			if s.Child > 0 {
				children[s.ID] = true
			}
		}
	}
	exited0 := map[string]bool{}
	ran := map[string]bool{}          // step#attempt: s.sh ran to its end
	gotUses := map[string][]string{}  // step#attempt: the output values it was given
	handled := map[string]bool{}      // step#failed attempt: its handler ran
	gotHUses := map[string][]string{} // step#failed attempt: the values its handler was given
	for _, l := range strings.Split(trace, "\n") {
		f := strings.Fields(l)
		if len(f) == 4 && f[0] == "attempt" {
			ran[f[1]+"#"+f[2]] = true
			if f[3] == "0" {
				exited0[f[1]+"#"+f[2]] = true
			}
		}
		if len(f) >= 3 && f[0] == "uses" {
			gotUses[f[1]+"#"+f[2]] = append(gotUses[f[1]+"#"+f[2]], strings.Join(f[3:], " "))
		}
		if len(f) == 4 && f[0] == "handler" {
			handled[f[1]+"#"+f[2]] = true
		}
		if len(f) >= 3 && f[0] == "huses" {
			gotHUses[f[1]+"#"+f[2]] = append(gotHUses[f[1]+"#"+f[2]], strings.Join(f[3:], " "))
		}
	}
	// givenOutputs checks, for each run (step#attempt) that ran, that it
	// was given the values of the outputs of steps usesOf(step) and no
	// other (got: the values it recorded); what says who ran.
	givenOutputs := func(what string, ran map[string]bool, got map[string][]string, usesOf func(*model.Step) []int) {
		steps := map[string]*model.Step{}
		for i := range p.Steps {
			steps[p.Steps[i].ID] = &p.Steps[i]
		}
		if p.End != nil {
			steps["end"] = p.End
		}
		for k := range ran {
			id, _, _ := strings.Cut(k, "#")
			var want []string
			if s := steps[id]; s != nil {
				for _, u := range usesOf(s) {
					want = append(want, "val-"+p.Steps[u].ID)
				}
			}
			have := slices.Compact(slices.Sorted(slices.Values(got[k])))
			slices.Sort(want)
			if !slices.Equal(have, want) {
				bad = append(bad, fmt.Sprintf("%s %s ran with outputs %q, want %q", what, k, have, want))
			}
		}
	}
	// A handler that ran was given the value of every output its
	// on_failure uses, and nothing else; one whose value is missing never
	// starts (the step ends remediation_failed, which the model checks).
	givenOutputs("the handler of", handled, gotHUses, func(s *model.Step) []int { return s.HUses })
	// An attempt that ran was given the value of every output its step
	// uses (README "Step outputs"), that step's, and nothing else: never an
	// empty string for a missing one (such an attempt runs no process).
	givenOutputs("attempt", ran, gotUses, func(s *model.Step) []int { return s.Uses })
	last := map[string]string{}    // step -> status
	open := map[string]int{}       // step -> attempt started, not ended
	succeeded := map[string]bool{} // step -> a success was recorded
	held := map[string][2]int{}    // step -> CPUs and pool units its running attempt or handler holds
	stopped := false
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			bad = append(bad, fmt.Sprintf("event %d has seq %d", i+1, e.Seq))
			break
		}
	}
	for _, e := range evs {
		switch e.Type {
		case "run_started", "run_resumed":
			stopped = false
			clear(held) // a re-attached job holds its own, uncounted: the check only ever counts less
			for k := range last {
				if last[k] == "canceled" || last[k] == "failure" || last[k] == "remediation_failed" || last[k] == "interrupted" || last[k] == "skipped" {
					delete(last, k)
				}
			}
		case "step_orphaned":
			delete(open, e.StepID)
		case "step_status":
			i, known := idx[e.StepID]
			isEnd := e.StepID == "end" && c.End
			if e.Status == "in_progress" {
				if known {
					for _, d := range p.Steps[i].Deps {
						ds := last[p.Steps[d].ID]
						ok := ds == "success" || ds == "cached" || ds == "skipped" || (ds == "failure" && p.Steps[d].OnFailure.Kind == model.OnContinue)
						if !ok {
							bad = append(bad, fmt.Sprintf("seq %d: %s started while its need %s was %q", e.Seq, e.StepID, p.Steps[d].ID, ds))
						}
					}
				}
				if stopped && p.Cancel && !isEnd {
					bad = append(bad, fmt.Sprintf("seq %d: %s attempt %d started after a cancel stop", e.Seq, e.StepID, e.Attempt))
				}
				if succeeded[e.StepID] && !isEnd {
					bad = append(bad, fmt.Sprintf("seq %d: %s ran again after its success", e.Seq, e.StepID))
				}
				open[e.StepID] = e.Attempt
				// What it reserved is its request, and with what the
				// others hold it fits the capacity (counting only the
				// attempts and handlers running: never more than is held).
				var want [2]int
				if known {
					want = [2]int{p.Steps[i].CPUs, len(p.Steps[i].Pools)}
				}
				var got [2]int
				if e.Reserved != nil {
					got = [2]int{e.Reserved.CPUs, len(e.Reserved.Pools)}
				}
				if got != want {
					bad = append(bad, fmt.Sprintf("seq %d: %s reserved %d CPUs and %d pools, its request is %d and %d", e.Seq, e.StepID, got[0], got[1], want[0], want[1]))
				}
				held[e.StepID] = got
				var sum [2]int
				for _, h := range held {
					sum[0] += h[0]
					sum[1] += h[1]
				}
				if c.CPUs > 0 && sum[0] > c.CPUs || c.PoolSize > 0 && sum[1] > c.PoolSize {
					bad = append(bad, fmt.Sprintf("seq %d: with %s, running steps hold %d CPUs and %d of pool pa; the capacity is %d and %d", e.Seq, e.StepID, sum[0], sum[1], c.CPUs, c.PoolSize))
				}
			} else if e.Status != "pending" {
				delete(open, e.StepID)
			} else if strings.HasPrefix(e.Reason, "fan-out ") {
				// A fan-out with other items re-opens what comes after it
				// (README "Fan-out"): that success runs again.
				delete(succeeded, e.StepID)
			}
			if e.Status == "success" && known && !p.Steps[i].Join && !children[e.StepID] && !exited0[e.StepID+"#"+strconv.Itoa(e.Attempt)] {
				bad = append(bad, fmt.Sprintf("seq %d: %s is success at attempt %d, which did not exit 0", e.Seq, e.StepID, e.Attempt))
			}
			if e.Status == "success" && !isEnd {
				succeeded[e.StepID] = true
			}
			if known && !p.Steps[i].Join && (e.Status == "remediation_failed" ||
				(e.Status == "failure" && p.Steps[i].OnFailure.Kind != model.OnContinue)) {
				stopped = true
			}
			if e.Status != "in_progress" && e.Status != "remediating" {
				delete(held, e.StepID)
			}
			last[e.StepID] = e.Status
		}
	}
	for id, a := range open {
		bad = append(bad, fmt.Sprintf("%s attempt %d started and never ended", id, a))
	}
	return bad
}

// stopDead runs faber stop on run runID, whose faber was killed: stop
// takes the run over and ends what it left running (exit 130), or says
// the run is not active when it had nothing running (exit 4). After it
// no step is recorded running. It returns what is wrong, or "".
func stopDead(t *testing.T, self, dir, stateDir, runID string, faber func(int, ...string) (int, string), transcript *strings.Builder) string {
	t.Helper()
	code, out := faber(0, "stop", runID)
	fmt.Fprintf(transcript, "$ faber stop %s  -> exit %d\n", runID, code)
	t.Logf("faber stop of the killed run %s: exit %d", runID, code)
	switch {
	case code == 130 && strings.Contains(out, "has no faber (it died)"):
	case code == 4 && strings.Contains(out, "is not active"):
	default:
		return fmt.Sprintf("faber stop of the killed run exited %d:\n%s", code, out)
	}
	st, err := readStatus(self, dir, stateDir, runID)
	if err != nil {
		return err.Error()
	}
	for _, s := range st.Steps {
		if exec.Status(s.Status).Active() {
			return fmt.Sprintf("after faber stop, step %s is still %s:\n%s", s.ID, s.Status, out)
		}
	}
	if code == 130 && st.Status != "interrupted" {
		return fmt.Sprintf("after faber stop, the run is %s, not interrupted:\n%s", st.Status, out)
	}
	return ""
}

// checkNotified checks that every notification of the case ran on every
// event of its kinds and was recorded as failed (each fails: exit 1, or
// 124 past its timeout) with a notify_failed event, after that event. (A
// killed faber may lose what its notifications did: not checked then.)
func checkNotified(c *model.Case, stateDir, runID string) []string {
	if len(c.Notify) == 0 {
		return nil
	}
	lines, err := state.ReadEvents(stateDir, runID, 0)
	if err != nil {
		return []string{err.Error()}
	}
	type key struct {
		seq   int64
		kind  string
		index int
	}
	want := map[key]int{} // -> exit code
	got := map[key]int{}
	var bad []string
	for _, l := range lines {
		var e struct {
			Seq        int64  `json:"seq"`
			Type       string `json:"type"`
			Status     string `json:"status"`
			ExitCode   int    `json:"exit_code"`
			Kind       string `json:"kind"`
			Index      int    `json:"index"`
			TriggerSeq int64  `json:"trigger_seq"`
			Reason     string `json:"reason"`
		}
		if err := json.Unmarshal(l, &e); err != nil {
			return []string{err.Error()}
		}
		var kinds []string
		switch {
		case e.Type == "step_status" && (e.Status == "failure" || e.Status == "remediation_failed") && !strings.HasPrefix(e.Reason, "classified"):
			kinds = []string{"step_failed"}
		case e.Type == "step_status" && (e.Status == "pending_failed" || e.Status == "awaiting_approval"):
			kinds = []string{"awaiting_decision"}
		case e.Type == "workflow_completed" || e.Type == "workflow_failed":
			kinds = []string{"run_finished"}
			if e.Status == "failed" || e.Status == "remediation_failed" {
				kinds = append(kinds, "run_failed")
			}
			if e.Status == "interrupted" {
				kinds = append(kinds, "run_interrupted")
			}
		case e.Type == "notify_failed":
			k := key{e.TriggerSeq, e.Kind, e.Index}
			if e.TriggerSeq >= e.Seq {
				bad = append(bad, fmt.Sprintf("seq %d: notify_failed before the event %d it was run on", e.Seq, e.TriggerSeq))
			}
			if _, dup := got[k]; dup {
				bad = append(bad, fmt.Sprintf("seq %d: notification %d on %s of event %d recorded twice", e.Seq, e.Index, e.Kind, e.TriggerSeq))
			}
			got[k] = e.ExitCode
		}
		for _, kind := range kinds {
			for i, n := range c.Notify {
				if slices.Contains(n.On, kind) {
					code := 1
					if n.Hang {
						code = 124
					}
					want[key{e.Seq, kind, i + 1}] = code
				}
			}
		}
	}
	for k, code := range want {
		if g, ok := got[k]; !ok {
			bad = append(bad, fmt.Sprintf("run %s: notification %d on %s of event %d: no notify_failed", runID, k.index, k.kind, k.seq))
		} else if g != code {
			bad = append(bad, fmt.Sprintf("run %s: notification %d on %s of event %d failed with exit code %d, want %d", runID, k.index, k.kind, k.seq, g, code))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			bad = append(bad, fmt.Sprintf("run %s: notify_failed for notification %d on %s of event %d, which is not of that kind", runID, k.index, k.kind, k.seq))
		}
	}
	return bad
}
