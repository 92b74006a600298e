package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/state"
)

// DefaultWindow is how many finished runs a history covers unless told.
const DefaultWindow = 20

// History is one plan's history over its last finished runs (faber report
// --plan, and the History section of a run's report; README "History").
// Its JSON field names are stable: fields may be added, never renamed.
type History struct {
	Plan string `json:"plan"`
	// Window is the number of finished runs asked for (--runs N); Runs
	// are those found, oldest first, at most Window.
	Window int           `json:"window"`
	Runs   []*HistoryRun `json:"runs"`
	// Steps are the plan's steps (a fan-out's items folded into their
	// fan-out step), in the plan order of the newest run, then any step
	// only older runs had.
	Steps []*StepHistory `json:"steps"`
	// Flaky are the ids of the steps that were flaky in at least one run,
	// most often flaky first.
	Flaky []string `json:"flaky"`
	// Unreadable are the runs of the window whose event log could not be
	// read (left out of every figure).
	Unreadable []string `json:"unreadable,omitempty"`
}

// HistoryRun is one run of a history.
type HistoryRun struct {
	RunID      string    `json:"run_id"`
	Status     string    `json:"status"`
	StartedAt  time.Time `json:"started_at"`
	DurationMs int64     `json:"duration_ms"`
}

// StepHistory is one step across the runs of a history.
type StepHistory struct {
	ID string `json:"id"`
	// Ran is in how many runs it ran (started an attempt); Runs of those
	// it ended success, failed (failure, remediation_failed,
	// pending_failed), retried (more than one attempt) and was flaky
	// (ended success after more than one attempt).
	Ran       int `json:"ran"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Retried   int `json:"retried"`
	Flaky     int `json:"flaky"`
	// FailureRate is Failed/Ran, RetryRate Retried/Ran (0 when Ran is 0).
	FailureRate float64 `json:"failure_rate"`
	RetryRate   float64 `json:"retry_rate"`
	// DurationsMs has one entry per run of History.Runs, oldest first:
	// the step's duration there, null where it did not run.
	DurationsMs []*int64 `json:"durations_ms"`
	// Statuses has one entry per run: how the step ended there ("" where
	// the run had no such step).
	Statuses []string `json:"statuses"`
	MinMs    *int64   `json:"min_ms"`
	MedianMs *int64   `json:"median_ms"`
	MaxMs    *int64   `json:"max_ms"`
	// ExpectedMs is what the ETA expects of it: the median duration of the
	// runs where it ended success (cached or skipped count as 0); null
	// when it never did.
	ExpectedMs *int64 `json:"expected_ms"`
	// Memory and Timeout are its right-sizing, when its attempts carry a
	// memory limit or request, or a timeout.
	Memory  *Sizing `json:"memory,omitempty"`
	Timeout *Sizing `json:"timeout,omitempty"`
}

// Sizing is the right-sizing of one limit of a step (README "History").
// Memory figures are bytes, time figures milliseconds.
type Sizing struct {
	Unit string `json:"unit"` // bytes | ms
	// Asked is the limit (else the request) its first attempt had in the
	// newest run that ran it with one.
	Asked int64 `json:"asked"`
	// Measured is the highest peak RSS (memory) or the longest successful
	// attempt (time) over the runs where it ended success; null: no data.
	Measured *int64 `json:"measured"`
	// Suggested is 1.2 × Measured rounded up to the next MiB or second.
	Suggested *int64 `json:"suggested"`
	// Verdict is "too tight" (an attempt of the window ended oom or
	// timeout), "no data", "asks for X× what it uses" (Asked ≥ 2 ×
	// Suggested), or "" (it fits).
	Verdict string `json:"verdict"`
}

// runStep is what one run's event log tells of one step (its items folded in).
type runStep struct {
	ran       bool
	status    string
	start     time.Time
	end       time.Time
	retried   bool
	attempts  map[string]int // attempts per item ("" for the step itself)
	peak      int64          // highest peak RSS of a successful attempt
	longest   int64          // longest successful attempt, ms
	memAsked  int64          // first attempt's memory limit or request
	timeAsked int64          // first attempt's timeout
	memFirst  bool           // memAsked was taken
	timeFirst bool
	oom       bool
	timedOut  bool
}

// runEvents is what history takes of one run.
type runEvents struct {
	ok    bool
	order []string // step ids in plan order (items left out)
	steps map[string]*runStep
}

// hEvent is the part of an event history reads.
type hEvent struct {
	Type       string           `json:"type"`
	Time       time.Time        `json:"time"`
	StepID     string           `json:"step_id"`
	Attempt    int              `json:"attempt"`
	Status     string           `json:"status"`
	StartedAt  *time.Time       `json:"started_at"`
	FinishedAt *time.Time       `json:"finished_at"`
	DurationMs *int64           `json:"duration_ms"`
	AttemptEnd *exec.AttemptEnd `json:"attempt_end"`
	Reserved   *exec.Reserved   `json:"reserved"`
	Steps      []exec.StepInfo  `json:"steps"`
}

// NoRunsError is the error of a history of a plan with no finished runs
// (exit 4, as a run that is not found).
func NoRunsError(plan, stateDir string) error {
	return &run.StateError{Err: fmt.Errorf("no finished runs of plan %q in %s (faber list --plan %s shows its runs)", plan, stateDir, plan)}
}

// LoadHistory is the history of plan over its last n finished runs in
// stateDir (n < 1: DefaultWindow). With upTo set, only the runs that
// started no later than that run count (faber list's order), that run
// included when it is finished. Active and damaged runs are left out. It
// reads each run's summary and events.jsonl, never a run's store.
func LoadHistory(stateDir, plan string, n int, upTo string) (*History, error) {
	if n < 1 {
		n = DefaultWindow
	}
	items, err := run.List(stateDir, run.ListFilter{Plan: plan})
	if err != nil {
		return nil, err
	}
	if upTo != "" {
		for i, it := range items {
			if it.RunID == upTo {
				items = items[i:]
				break
			}
		}
	}
	var picked []run.ListItem
	for _, it := range items {
		if it.Status == exec.RunInProgress || it.Status == run.StatusDamaged {
			continue
		}
		picked = append(picked, it)
		if len(picked) == n {
			break
		}
	}
	slices.Reverse(picked) // oldest first
	logs := make([]runEvents, len(picked))
	parallel(len(picked), func(i int) { logs[i] = readRunLog(stateDir, picked[i].RunID) })
	h := buildHistory(plan, n, picked, logs)
	return h, nil
}

// parallel calls f(0) ... f(n-1) on as many goroutines as there are CPUs.
func parallel(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	next := 0
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= n {
					return
				}
				f(i)
			}
		}()
	}
	wg.Wait()
}

// readRunLog reads a run's events.jsonl (complete lines only).
func readRunLog(stateDir, runID string) runEvents {
	data, err := os.ReadFile(filepath.Join(state.RunDir(stateDir, runID), "events.jsonl"))
	if err != nil {
		return runEvents{}
	}
	return scanRunLog(data)
}

// scanRunLog reads the events of one run, one JSON object a line.
func scanRunLog(data []byte) runEvents {
	l := runEvents{ok: true, steps: map[string]*runStep{}}
	fanOut := map[string]string{} // item id → its fan-out step
	known := map[string]bool{}
	addSteps := func(infos []exec.StepInfo) {
		for _, s := range infos {
			if s.FanOut != "" {
				fanOut[s.ID] = s.FanOut
				continue
			}
			if !known[s.ID] {
				known[s.ID] = true
				l.order = append(l.order, s.ID)
			}
		}
	}
	stepOf := func(id string) (string, string) {
		if f, ok := fanOut[id]; ok {
			return f, id
		}
		if i := strings.IndexByte(id, '['); i > 0 && known[id[:i]] {
			return id[:i], id
		}
		return id, ""
	}
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break // a line still being written
		}
		line := data[:i]
		data = data[i+1:]
		// Only these events tell history anything.
		if !bytes.Contains(line, []byte(`"type":"step_status"`)) && !bytes.Contains(line, []byte(`"type":"run_started"`)) && !bytes.Contains(line, []byte(`"type":"run_resumed"`)) {
			continue
		}
		var e hEvent
		if !bytes.Contains(line, []byte(`"type":"step_status"`)) || !fastStepStatus(line, &e) {
			if json.Unmarshal(line, &e) != nil {
				continue
			}
		}
		if e.Type != exec.EvStepStatus {
			if e.Type == exec.EvRunStarted || e.Type == exec.EvRunResumed {
				addSteps(e.Steps)
			}
			continue
		}
		id, item := stepOf(e.StepID)
		if !known[id] {
			known[id] = true
			l.order = append(l.order, id)
		}
		s := l.steps[id]
		if s == nil {
			s = &runStep{attempts: map[string]int{}}
			l.steps[id] = s
		}
		s.read(&e, item)
	}
	return l
}

// read takes in one step_status event of the step, or of one of its
// items (item set).
func (s *runStep) read(e *hEvent, item string) {
	widen := func(t time.Time) {
		if s.start.IsZero() || t.Before(s.start) {
			s.start = t
		}
		if t.After(s.end) {
			s.end = t
		}
	}
	if item == "" { // an item's status is not its fan-out's
		s.status = e.Status
	}
	switch e.Status {
	case exec.StatusInProgress:
		s.ran = true
		s.attempts[item]++
		if s.attempts[item] > 1 {
			s.retried = true
		}
		t := e.Time
		if e.StartedAt != nil {
			t = *e.StartedAt
		}
		widen(t)
		if r := e.Reserved; r != nil && r.MemoryBytes > 0 && !s.memFirst {
			s.memAsked = r.MemoryBytes
		}
	case exec.StatusPending:
		return
	default:
		if !s.ran && item == "" {
			return // cached, skipped, canceled before it ran: no span
		}
		t := e.Time
		if e.FinishedAt != nil {
			t = *e.FinishedAt
		}
		if !s.start.IsZero() {
			widen(t)
		}
	}
	ae := e.AttemptEnd
	if ae == nil {
		return
	}
	switch ae.Cause {
	case "oom":
		s.oom = true
	case "timeout":
		s.timedOut = true
	}
	res := ae.Resources
	if res != nil {
		if !s.memFirst {
			if res.MemoryLimitBytes > 0 {
				s.memAsked = res.MemoryLimitBytes
			}
			s.memFirst = true
		}
		if !s.timeFirst {
			s.timeAsked = res.TimeoutMs
			s.timeFirst = true
		}
	}
	if e.Status == exec.StatusSuccess && ae.ExitCode != nil && *ae.ExitCode == 0 && ae.Cause == "" {
		if res != nil && res.PeakRSSBytes > s.peak {
			s.peak = res.PeakRSSBytes
		}
		ms := int64(-1)
		if res != nil && res.WallMs > 0 {
			ms = res.WallMs
		} else if e.DurationMs != nil {
			ms = *e.DurationMs
		}
		if ms > s.longest {
			s.longest = ms
		}
	}
}

// buildHistory makes the history of the runs read.
func buildHistory(plan string, window int, runs []run.ListItem, logs []runEvents) *History {
	h := &History{Plan: plan, Window: window, Runs: []*HistoryRun{}, Steps: []*StepHistory{}, Flaky: []string{}}
	var kept []runEvents
	for i, it := range runs {
		if !logs[i].ok {
			h.Unreadable = append(h.Unreadable, it.RunID)
			continue
		}
		hr := &HistoryRun{RunID: it.RunID, Status: it.Status, StartedAt: it.StartedAt}
		if it.FinishedAt != nil {
			hr.DurationMs = it.FinishedAt.Sub(it.StartedAt).Milliseconds()
		}
		h.Runs = append(h.Runs, hr)
		kept = append(kept, logs[i])
	}
	// step order: the newest run's, then what older runs add
	var order []string
	seen := map[string]bool{}
	for i := len(kept) - 1; i >= 0; i-- {
		for _, id := range kept[i].order {
			if !seen[id] {
				seen[id] = true
				order = append(order, id)
			}
		}
	}
	for _, id := range order {
		h.Steps = append(h.Steps, stepHistory(id, kept))
	}
	for _, s := range h.Steps {
		if s.Flaky > 0 {
			h.Flaky = append(h.Flaky, s.ID)
		}
	}
	byID := map[string]*StepHistory{}
	for _, s := range h.Steps {
		byID[s.ID] = s
	}
	slices.SortStableFunc(h.Flaky, func(a, b string) int { return byID[b].Flaky - byID[a].Flaky })
	return h
}

// stepHistory applies the rules of README "History" to one step.
func stepHistory(id string, logs []runEvents) *StepHistory {
	sh := &StepHistory{ID: id, DurationsMs: make([]*int64, len(logs)), Statuses: make([]string, len(logs))}
	var durs, okDurs []int64
	var peak, longest int64 = -1, -1
	var memAsked, timeAsked int64
	var oom, timedOut, anyOK bool
	for i, l := range logs {
		s := l.steps[id]
		if s == nil {
			continue
		}
		sh.Statuses[i] = s.status
		st := exec.Status(s.status)
		if st == exec.StatusCached || st == exec.StatusSkipped {
			okDurs = append(okDurs, 0)
		}
		if !s.ran {
			continue
		}
		sh.Ran++
		d := s.end.Sub(s.start).Milliseconds()
		if d < 0 {
			d = 0
		}
		sh.DurationsMs[i] = &d
		durs = append(durs, d)
		if st.Failed() {
			sh.Failed++
		}
		if s.retried {
			sh.Retried++
		}
		if st == exec.StatusSuccess {
			sh.Succeeded++
			okDurs = append(okDurs, d)
			if s.retried {
				sh.Flaky++
			}
			anyOK = true
			peak = max(peak, s.peak)
			longest = max(longest, s.longest)
		}
		if s.memAsked > 0 {
			memAsked = s.memAsked // the newest run's wins
		}
		if s.timeAsked > 0 {
			timeAsked = s.timeAsked
		}
		oom = oom || s.oom
		timedOut = timedOut || s.timedOut
	}
	if sh.Ran > 0 {
		sh.FailureRate = float64(sh.Failed) / float64(sh.Ran)
		sh.RetryRate = float64(sh.Retried) / float64(sh.Ran)
		sorted := slices.Clone(durs)
		slices.Sort(sorted)
		lo, hi, med := sorted[0], sorted[len(sorted)-1], median(sorted)
		sh.MinMs, sh.MaxMs, sh.MedianMs = &lo, &hi, &med
	}
	if len(okDurs) > 0 {
		slices.Sort(okDurs)
		e := median(okDurs)
		sh.ExpectedMs = &e
	}
	if memAsked > 0 {
		sh.Memory = sizing("bytes", memAsked, peak, anyOK && peak > 0, oom, 1<<20)
	}
	if timeAsked > 0 {
		sh.Timeout = sizing("ms", timeAsked, longest, anyOK && longest >= 0, timedOut, 1000)
	}
	return sh
}

// median is the middle of sorted values, the mean of the two middle ones
// (rounded down) for an even count.
func median(sorted []int64) int64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// sizing is the right-sizing of one limit: asked, what was measured (ok:
// there is a measure), whether an attempt ran out of it, and the unit
// suggestions are rounded up to.
func sizing(unit string, asked, measured int64, ok, tight bool, round int64) *Sizing {
	z := &Sizing{Unit: unit, Asked: asked}
	if ok {
		m := measured
		// 1.2 × m, rounded up to the next unit: integers only, so that
		// the rule holds exactly.
		sug := (m*12 + 9) / 10
		sug = (sug + round - 1) / round * round
		if sug == 0 {
			sug = round
		}
		z.Measured, z.Suggested = &m, &sug
	}
	switch {
	case tight:
		z.Verdict = "too tight"
	case !ok:
		z.Verdict = "no data"
	case asked >= 2**z.Suggested:
		z.Verdict = fmt.Sprintf("asks for %s× what it uses", ratio(asked, *z.Measured))
	}
	return z
}

// ratio is a/b to one decimal, "many" for b = 0.
func ratio(a, b int64) string {
	if b <= 0 {
		return "many"
	}
	r := float64(a) / float64(b)
	if r >= 10 {
		return fmt.Sprintf("%.0f", r)
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", r), ".0")
}
