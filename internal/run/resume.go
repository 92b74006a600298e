package run

import (
	"errors"
	"fmt"
	"os"

	"github.com/faber-run/faber/exec"
	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/state"
)

// ResumeOptions are what `faber resume` may change about a run.
type ResumeOptions struct {
	// PlanFile, when set, is an edited plan to resume with (SPEC §8).
	PlanFile     string
	RetryPending bool
	// Capacity is resume's --cpus, --memory and --gpus (a 0 field not
	// given): the run's capacity is resolved from them (Capacity).
	Capacity spec.Capacity
	// Stopping is faber stop's takeover of a run whose faber died: nothing
	// starts, so no step's request is checked against the capacity.
	Stopping bool
}

// Resumable is a run taken over for a new session: its store (owned; the
// caller closes it), its plan, and its records prepared by exec.PrepareResume.
type Resumable struct {
	Store    *state.Store
	Plan     *spec.Plan
	Prior    *exec.Prior
	Capacity spec.Capacity // resolved: ResumeOptions.Capacity, the plan's, the machine's
	Warnings []spec.Diagnostic
	// Canceled says how many leftover scheduler jobs of a dead owner were
	// canceled, by engine.
	Canceled []exec.Canceled
}

// Resume takes over a run that is not active for a new session (SPEC §8):
// it loads its records and its plan (the stored one, or an edited one),
// terminates whatever a dead owner left running, and prepares the steps to
// run again. An invalid plan is returned as spec's error, as is.
func Resume(stateDir, runID string, opt state.Options, o ResumeOptions) (res *Resumable, err error) {
	store, err := Open(stateDir, runID, opt)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			store.Close()
		}
	}()
	PrepareView(store) // while the records and the plan load
	snap, prior, err := LoadRecords(store, runID, stateDir)
	if err != nil {
		return nil, err
	}
	if prior.Run.Status == exec.RunSuccess && allSuccess(prior) {
		return nil, stateProblem(fmt.Errorf("run %s already succeeded; nothing to resume (faber reset %s --step ID re-runs steps)", runID, runID))
	}
	opts := spec.Options{Sets: snap.Meta.Sets}
	for k := range snap.Meta.Sets {
		opts.SetKeys = append(opts.SetKeys, k)
	}
	file, data := snap.Meta.PlanFile, snap.Plan
	if o.PlanFile != "" {
		if data, err = spec.ReadPlanFile(o.PlanFile); err != nil {
			var inv *spec.Invalid
			if errors.As(err, &inv) {
				return nil, err
			}
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = fmt.Errorf("%s: %w", pe.Path, pe.Err)
			}
			return nil, usage(fmt.Errorf("cannot read plan: %w", err))
		}
		file = o.PlanFile
	}
	plan, err := spec.Parse(file, data, opts)
	if err != nil {
		var inv *spec.Invalid
		if !errors.As(err, &inv) {
			err = usage(err)
		}
		return nil, err
	}
	if plan, err = SelectPart(plan, snap.Meta.Part); err != nil {
		return nil, usage(err) // an edited plan without a step of the part
	}
	exec.ApplyExpansions(plan, prior) // the items its glob:/lines: fan-outs were expanded to
	if o.PlanFile == "" {
		exec.FillPending(plan, prior) // the stored plan: its steps that never started
	}
	if err := exec.CheckExecutors(plan); err != nil {
		return nil, usage(err)
	}
	// A step that could never start refuses the plan before anything
	// starts or ends, as run does.
	capacity, err := Capacity(plan, o.Capacity)
	if err != nil && !o.Stopping {
		return nil, err
	}
	res = &Resumable{Store: store, Plan: plan, Prior: prior, Capacity: capacity, Warnings: plan.Warnings}

	// A dead owner may have left processes, cgroups and scheduler jobs
	// behind: end them before any step runs again, so that no step ever
	// runs twice at the same time.
	left, err := exec.EndLeftovers(plan, prior, runID)
	if err != nil {
		return nil, stateProblem(err)
	}
	res.Canceled = left.Canceled
	// ... and a sub-plan's context file that it wrote for a child that
	// never read it.
	exec.RemoveChildContexts(state.RunDir(stateDir, runID))
	if err := exec.PrepareResume(plan, prior, exec.ResumeOptions{RetryPending: o.RetryPending, EditedPlan: o.PlanFile != "", Reattach: left.Reattach}); err != nil {
		return nil, usage(err)
	}
	if o.PlanFile != "" {
		if err := store.SetPlan(data); err != nil {
			return nil, stateProblem(err)
		}
	}
	return res, nil
}

func allSuccess(p *exec.Prior) bool {
	for _, st := range p.Steps {
		if !exec.Status(st.Status).Succeeded() {
			return false
		}
	}
	return true
}
