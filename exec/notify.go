package exec

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/spec/subst"
)

// Notifications (README "Notifications"): the plan's notify: commands, run
// on chosen events once those are committed. They are fire-and-forget: a
// notification never holds a job slot, never blocks the scheduler and never
// changes a status, an exit code or the run's outcome. Its failure is an
// event, notify_failed, committed with the session's next commit, or at the
// end of the session, which waits for the notifications still running (each
// bounded by its timeout) so that a run_finished one is not lost when faber
// exits.

// EvNotifyFailed is the event of a notification that failed: it exited
// non-zero, timed out, could not start, or was killed by an interrupt of
// the wait at the end of the session.
const EvNotifyFailed = "notify_failed"

// NotifyDir is the directory, under a run's logs, of its notifications'
// output: <seq>-<kind>-<n>.out|.err, seq the triggering event's and n the
// notification's place in notify: (1-based). No step id can be it.
const NotifyDir = "_notify"

// NotifyFailed is the payload of notify_failed. The exit code is the
// event's own exit_code (124 for a timeout, 127 when it could not start).
type NotifyFailed struct {
	Command string `json:"command"` // the notify: entry's run, as written (masked)
	Error   string `json:"error"`
	Index   int    `json:"index"` // its place in notify:, 1-based
	Kind    string `json:"kind"`
	// Log is the notification's stderr log, relative to the run's dir.
	Log        string `json:"log"`
	TriggerSeq int64  `json:"trigger_seq"` // the event it was run on
}

func (*NotifyFailed) eventType() string { return EvNotifyFailed }

// notifier is what a session knows of its notifications.
type notifier struct {
	wg      sync.WaitGroup
	mu      sync.Mutex
	failed  []Event            // notify_failed events not yet committed
	running map[*procCtrl]bool // to stop them all at once
}

// take returns the notify_failed events not yet committed, and forgets them.
func (n *notifier) take() []Event {
	n.mu.Lock()
	defer n.mu.Unlock()
	evs := n.failed
	n.failed = nil
	return evs
}

// NotifyKindsOf are the notification kinds a committed event is: none for
// most. A step's final failure is step_failed; a step that waits for a
// person (pending_failed, awaiting_approval) awaiting_decision; the end of
// a session run_finished, with run_failed or run_interrupted as its status
// says.
func NotifyKindsOf(e *Event) []string {
	switch e.Type {
	case EvStepStatus:
		switch e.Status {
		case StatusFailure, StatusRemediationFailed:
			if d, ok := e.Data.(*StepStatus); ok && strings.HasPrefix(d.Reason, "classified") {
				// faber classify --fail: a person's decision, not a
				// failure faber found (offline, no faber runs the run to
				// notify anyway): no step_failed.
				return nil
			}
			return []string{spec.NotifyStepFailed}
		case StatusPendingFailed, StatusAwaitingApproval:
			return []string{spec.NotifyAwaitingDecision}
		}
	case EvWorkflowCompleted, EvWorkflowFailed:
		kinds := []string{spec.NotifyRunFinished}
		switch e.Status {
		case RunFailed, RunRemediationFailed:
			kinds = append(kinds, spec.NotifyRunFailed)
		case RunInterrupted:
			kinds = append(kinds, spec.NotifyRunInterrupted)
		}
		return kinds
	}
	return nil
}

// notify starts the plan's notifications of committed events evs. It runs
// on the runner's goroutine, right after the commit.
func (r *Runner) notify(evs []Event) {
	if len(r.Plan.Notify) == 0 {
		return
	}
	for i := range evs {
		for _, kind := range NotifyKindsOf(&evs[i]) {
			for j, n := range r.Plan.Notify {
				if n.Wants(kind) {
					r.startNotify(&evs[i], kind, j+1, n)
				}
			}
		}
	}
}

// startNotify starts notification n (the index-th) on event e as kind.
func (r *Runner) startNotify(e *Event, kind string, index int, n *spec.Notify) {
	name := fmt.Sprintf("%d-%s-%d", e.Seq, kind, index)
	logs := filepath.Join(r.RunDir, "logs", NotifyDir)
	ps, err := r.notifySpec(e, kind, n)
	ps.stdoutPath = filepath.Join(logs, name+".out")
	ps.stderrPath = filepath.Join(logs, name+".err")
	fail := func(code int, msg string) {
		ev := Event{Type: EvNotifyFailed, ExitCode: intp(code), Data: &NotifyFailed{Kind: kind, Index: index,
			Command: n.Run, Error: msg, Log: filepath.Join("logs", NotifyDir, name+".err"), TriggerSeq: e.Seq}}
		r.notes.mu.Lock()
		r.notes.failed = append(r.notes.failed, ev)
		r.notes.mu.Unlock()
	}
	if err != nil {
		// Validation renders every command: not to be, but recorded.
		fail(127, "cannot start: "+err.Error())
		return
	}
	ctrl := newCtrl()
	r.notes.mu.Lock()
	if r.notes.running == nil {
		r.notes.running = map[*procCtrl]bool{}
	}
	r.notes.running[ctrl] = true
	r.notes.mu.Unlock()
	r.notes.wg.Add(1)
	go func() {
		defer r.notes.wg.Done()
		o := runProc(ps, ctrl)
		r.notes.mu.Lock()
		delete(r.notes.running, ctrl)
		r.notes.mu.Unlock()
		switch {
		case o.stoppedBy != "" && !o.timedOut:
			fail(o.exitCode, "stopped: faber was interrupted while it waited for the notification")
		case o.failed():
			fail(o.exitCode, r.mask.String(o.errorText()))
		}
	}()
}

// notifySpec builds the process of a notification: the plan's shell runs
// its command, rendered safely (subst.Script: values reach the shell
// through FABER_SUB_* variables, never through argv), in the plan's
// directory, with the event on stdin.
func (r *Runner) notifySpec(e *Event, kind string, n *spec.Notify) (procSpec, error) {
	p := r.Plan
	var stepID, status, errText, runStatus string
	switch e.Type {
	case EvStepStatus:
		stepID, status = e.StepID, e.Status
		if d, ok := e.Data.(*StepStatus); ok {
			errText = d.Error
		}
	default:
		status, runStatus = e.Status, e.Status
	}
	vars := make(map[string]string, len(p.Context)+8)
	for k, v := range p.Context {
		vars[k] = v
	}
	for k, v := range map[string]string{"run_id": r.RunID, "plan": p.Name, "plan_name": p.Name, "event": kind,
		"step_id": stepID, "status": status, "error": errText} {
		vars[k] = v
	}
	text, subEnv, err := subst.Script(n.Run, vars)
	if err != nil {
		return procSpec{}, err
	}
	argv := ShellArgv(p.ShellFor(nil), text)
	argv[0] = r.lookShell(argv[0])
	env := make([]string, 0, len(r.baseEnv)+len(p.EnvKeys)+len(p.ContextKeys)+len(subEnv)+10)
	env = append(env, r.baseEnv...)
	for _, k := range p.EnvKeys {
		v, err := subst.Expand(p.Env[k], vars)
		if err != nil {
			v = p.Env[k]
		}
		env = append(env, k+"="+v)
	}
	env = append(env,
		"FABER_EVENT="+kind,
		"FABER_RUN_ID="+r.RunID,
		"FABER_PLAN="+r.planFile,
		"FABER_STEP_ID="+stepID,
		"FABER_STATUS="+status,
		"FABER_ERROR="+errText,
	)
	if r.StateDir != "" {
		env = append(env, "FABER_STATE_DIR="+r.StateDir)
	}
	if runStatus != "" {
		env = append(env, "FABER_RUN_STATUS="+runStatus)
	}
	for _, k := range p.ContextKeys {
		env = append(env, "FABER_CTX_"+strings.ToUpper(k)+"="+p.Context[k])
	}
	env = append(env, subEnv...)
	for i := len(r.baseEnv); i < len(env); i++ {
		env[i] = subst.CleanValue(env[i])
	}
	return procSpec{
		argv:    argv,
		dir:     p.Dir,
		env:     env,
		timeout: n.Timeout,
		grace:   firstDur(p.KillGrace, 10*time.Second),
		stdin:   notifyInput(e.JSON, kind),
	}, nil
}

// notifyInput is a notification's standard input: the committed event's
// JSON object (as faber events --json prints it) with "notify": kind added,
// and a newline.
func notifyInput(event []byte, kind string) []byte {
	b := make([]byte, 0, len(event)+len(kind)+16)
	if len(event) >= 2 && event[len(event)-1] == '}' {
		b = append(b, event[:len(event)-1]...)
		if len(event) > 2 {
			b = append(b, ',')
		}
	} else {
		b = append(b, '{')
	}
	b = append(b, `"notify":`...)
	b = strconv.AppendQuote(b, kind)
	return append(b, "}\n"...)
}

// waitNotify waits for the notifications still running at the end of the
// session. A stop (ctx done during the wait; when ctx was done before it,
// a hard stop, the second Ctrl-C) ends the wait: they are killed.
func (r *Runner) waitNotify(ctx context.Context) {
	done := make(chan struct{})
	go func() { r.notes.wg.Wait(); close(done) }()
	stop := ctx.Done()
	if ctx.Err() != nil {
		stop = r.HardStop
	}
	select {
	case <-done:
		return
	case <-stop:
	}
	r.notes.mu.Lock()
	for c := range r.notes.running {
		c.Stop(reasonInterrupt, true)
	}
	r.notes.mu.Unlock()
	<-done
}
