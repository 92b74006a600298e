package main

import (
	"strings"
	"sync"
	"time"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/internal/control"
	"github.com/faber-run/faber/internal/report"
	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/state"
	"github.com/faber-run/faber/tui"
)

// newTUI returns the live terminal view for a run. q / Ctrl-C in the view
// (keys, not signals, in raw mode) go to g.interrupt, which main sets up to
// do what SIGINT does. For a resume, pass the prepared prior state so that
// the steps kept from earlier sessions show their status. With decide, the
// session waits in the view for a decision on pending_failed steps
// (tui.Options.WaitDecisions): the caller hands TUI.Decisions to the runner.
func newTUI(g *Globals, plan *spec.Plan, runID string, decide bool, prior ...*exec.Prior) *tui.TUI {
	return tui.New(g.stdout, g.stdin, liveOptions(g, plan, runID, decide, prior...))
}

// liveOptions are the options of faber run's live view of a run, in this
// process (newTUI) or in the foreground of a background owner (detach.go,
// which only changes where Ctrl-C goes). plan may be nil there (the steps
// then come from the run's events).
func liveOptions(g *Globals, plan *spec.Plan, runID string, decide bool, prior ...*exec.Prior) tui.Options {
	var steps []tui.StepDef
	name := ""
	if plan != nil {
		steps, name = stepDefs(plan), plan.Name
	}
	var states map[string]*exec.StepState
	if len(prior) > 0 && prior[0] != nil {
		states = prior[0].Steps
	}
	return tui.Options{
		Plan:   name,
		RunID:  runID,
		Steps:  steps,
		Prior:  states,
		Styles: tui.NewStyles(useColor(g, g.stdout)),
		OnInterrupt: func(hard bool) {
			if g.interrupt != nil {
				g.interrupt(hard)
			}
		},
		OnClassify:    classifier(g, runID),
		OnDecide:      gateDecider(g, runID),
		WaitDecisions: decide,
		Usage:         usageAsker(g, runID),
		Estimate:      estimator(g, plan),
		Budgets:       budgeter(plan),
	}
}

// budgeter is how a live view (the owner's, or attach's) shows the plan's
// budgets (tui.Options.Budgets, README "Budgets"): exec.Budgets of the
// plan over what the view knows the steps spent. nil without a plan or a
// budget in it.
func budgeter(plan *spec.Plan) func([]*exec.StepState) []exec.BudgetLine {
	if plan == nil || !plan.SetsBudget() {
		return nil
	}
	return func(steps []*exec.StepState) []exec.BudgetLine { return exec.Budgets(plan, nil, steps) }
}

// estimator is how a live view (the owner's, or attach's) shows the run's
// ETA (tui.Options.Estimate, README "History"): the expectations of the
// plan's last finished runs, read once in the background (nothing is shown
// until then), applied to the steps as the view knows them, with their
// needs from the plan. nil without a plan.
func estimator(g *Globals, plan *spec.Plan) func([]*exec.StepState, time.Time) string {
	if plan == nil {
		return nil
	}
	needs := map[string][]string{}
	for _, s := range exec.StepInfos(plan) {
		needs[s.ID] = s.Needs
	}
	var (
		mu     sync.Mutex
		x      *report.Expectation
		reason string
	)
	go func() {
		h, err := report.LoadHistory(g.StateDir, plan.Name, report.DefaultWindow, "")
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			reason = "no ETA: the plan's past runs cannot be read"
			return
		}
		e := h.Expect()
		x = &e
	}()
	return func(steps []*exec.StepState, now time.Time) string {
		mu.Lock()
		defer mu.Unlock()
		if x == nil {
			return reason
		}
		for _, st := range steps {
			if st.Needs == nil {
				st.Needs = needs[st.ID]
			}
		}
		return x.ETA(steps, now).Short()
	}
}

// usageAsker is how a live view (the owner's, or attach's) learns what the
// run uses of its capacity and why steps wait: it asks the run's owner over
// the control channel, as faber status does; the owner's scheduler works
// it out between two of its passes (exec.ControlReq.Usage).
func usageAsker(g *Globals, runID string) func() *exec.Usage {
	dir := state.RunDir(g.StateDir, runID)
	return func() *exec.Usage { return control.Usage(dir) }
}

// classifier is what r / x on a pending_failed step do in a live view (the
// owner's, or attach's): the same classification as faber classify, through
// the run's control channel, so the running session applies it at once
// (SPEC §6).
func classifier(g *Globals, runID string) func(stepID string, retry bool) error {
	return func(stepID string, retry bool) error {
		action := exec.ClassifiedFail
		if retry {
			action = exec.ClassifiedRetry
		}
		return run.Classify(g.StateDir, runID, stepID, action, "classified in the live view", storeOptions(g))
	}
}

// gateDecider is what a / x x on a step awaiting approval do in a live
// view: the decision faber approve / reject make, by: view.
func gateDecider(g *Globals, runID string) func(stepID string, approve bool) error {
	return func(stepID string, approve bool) error {
		req := exec.GateReq{Step: stepID, Approve: approve, By: "view"}
		if !approve {
			req.Text = "rejected in the live view"
		}
		_, err := run.Decide(g.StateDir, runID, req, storeOptions(g))
		return err
	}
}

// stepDefs is what the live view shows of a plan's steps before they run:
// plan order, the end step last.
func stepDefs(plan *spec.Plan) []tui.StepDef {
	steps := make([]tui.StepDef, 0, len(plan.Steps)+1)
	add := func(s *spec.Step) {
		steps = append(steps, tui.StepDef{ID: s.ID, Name: s.Name, Phase: s.Phase, Handler: handlerText(s.OnFailure), FanOut: s.FanOutOf})
	}
	for _, s := range plan.Steps {
		add(s)
	}
	if plan.End != nil {
		add(plan.End)
	}
	return steps
}

// handlerText is a step's on_failure command as written, shown while the
// handler runs ("" when the step has none).
func handlerText(of spec.OnFailure) string {
	switch of.Kind {
	case spec.OnCommand:
		return of.Command
	case spec.OnStructured:
		parts := []string{of.Command}
		for _, a := range of.Args {
			switch {
			case a.Omit:
			case a.Flag:
				parts = append(parts, "--"+a.Key)
			default:
				parts = append(parts, "--"+a.Key, a.Value)
			}
		}
		return strings.Join(parts, " ")
	}
	return ""
}
