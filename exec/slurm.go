package exec

// slurmWrap turns a local argv into the argv that runs it as a Slurm job
// step (srun, blocking) for steps with executor: slurm. It returns argv
// unchanged for local steps.
func (r *Runner) slurmWrap(sr *stepRun, argv []string, attempt int) []string {
	return argv
}

// CancelLeftoverSlurmJobs cancels the Slurm jobs a dead faber left behind
// for run runID (found by job name); it returns how many it canceled.
func CancelLeftoverSlurmJobs(runID string) int { return 0 }
