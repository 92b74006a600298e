package run

import (
	"testing"
	"time"

	"github.com/faber-run/faber/exec"
)

// The outcome the recorder gives the store for a run's summary is what
// exec.Replay reckons from the same events, to the nanosecond: 'faber list'
// shows one for runs with a summary and the other for runs without.
func TestOutcomeMatchesReplay(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 123456789, time.FixedZone("x", 3600))
	started := exec.Event{Type: exec.EvRunStarted, Data: &exec.RunStarted{Plan: "p"}}
	step := exec.Event{Type: exec.EvStepStatus, StepID: "a", Attempt: 1, Status: exec.StatusSuccess}
	done := exec.Event{Type: exec.EvWorkflowCompleted, Status: exec.RunSuccess}
	failed := exec.Event{Type: exec.EvWorkflowFailed, Status: exec.RunPendingFailed}
	interrupted := exec.Event{Type: exec.EvWorkflowFailed, Status: exec.RunInterrupted}
	bare := exec.Event{Type: exec.EvWorkflowFailed} // no status: failed
	bareDone := exec.Event{Type: exec.EvWorkflowCompleted}
	resumed := exec.Event{Type: exec.EvRunResumed}
	classified := exec.Event{Type: exec.EvStepClassified, StepID: "a", Data: &exec.StepClassified{Action: "retry"}}
	for name, evs := range map[string][]exec.Event{
		"success":              {started, step, done},
		"pending_failed":       {started, step, failed},
		"interrupted":          {started, interrupted},
		"no status":            {started, bare},
		"completed, no status": {started, bareDone},
		"resumed":              {started, failed, resumed},
		"resumed, then done":   {started, failed, resumed, step, done},
		"classified after":     {started, failed, classified},
		"started only":         {started},
	} {
		t.Run(name, func(t *testing.T) {
			var lines [][]byte
			var last *struct {
				status string
				at     *time.Time
			}
			for i, e := range evs {
				e.Seq, e.Time, e.RunID = int64(i+1), t0.Add(time.Duration(i)*time.Second), "r"
				b, err := e.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				lines = append(lines, b)
				if o, ok := outcomeOf(e.Type, b); ok {
					last = &struct {
						status string
						at     *time.Time
					}{o.Status, o.FinishedAt}
				}
			}
			v, err := exec.Replay(lines)
			if err != nil {
				t.Fatal(err)
			}
			if last == nil {
				t.Fatal("no outcome stated")
			}
			if last.status != v.Run.Status {
				t.Errorf("status %q, Replay says %q", last.status, v.Run.Status)
			}
			if (last.at == nil) != (v.Run.FinishedAt == nil) || last.at != nil && (!last.at.Equal(*v.Run.FinishedAt) || last.at.Location().String() != v.Run.FinishedAt.Location().String()) {
				t.Errorf("finished at %v, Replay says %v", last.at, v.Run.FinishedAt)
			}
		})
	}
}
