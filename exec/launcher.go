package exec

// A launcher runs a step attempt where the step's executor says: nil is this
// machine (a process group, SPEC §3); slurm.go runs it through srun (SPEC §9).
// A new executor is one file with a type that implements launcher and a case
// in launcherFor; the failure pipeline, logs and records do not change.
type launcher interface {
	// wrap returns the argv that runs argv under the executor.
	wrap(argv []string) []string
	// terminate asks the executor to end the attempt gracefully; false
	// means faber signals the process group itself.
	terminate() bool
	// finish reads, once the attempt has ended, how the executor ended it:
	// a reason for {error}, or "". It may correct the outcome. hard is
	// closed by a hard stop (a second Ctrl-C): what finish waits for (a
	// job leaving a cluster's queue) must then not be waited for.
	finish(argv []string, o *outcome, hard <-chan struct{}) string
	// ownLine reports a stderr line that is the executor's rather than the
	// step's, so {error} skips it; stopped says faber stopped the attempt.
	ownLine(line []byte, stopped bool) bool
}

// launcherFor is the launcher of the step's attempt n, or nil to run it on
// this machine. A sub-plan step's child faber always runs here.
func (r *Runner) launcherFor(sr *stepRun, n int, vars map[string]string, lim limits) launcher {
	if sr.def.PlanPath != "" {
		return nil
	}
	switch sr.def.Executor {
	case executorSlurm:
		return newSlurmLauncher(r.RunID, sr.def, n, r.workDir(sr, vars), lim)
	}
	return nil
}
