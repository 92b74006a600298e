package exec

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Fan-outs as Slurm job arrays (batch_array.go gathers the items): the
// items started together are one `sbatch --array=0-<k-1>`, not k jobs. An
// item keeps its own environment, working directory, argv and log files
// through a task script of its own (attempt-<N>.task.sh beside its logs),
// which the array's job script runs by SLURM_ARRAY_TASK_ID; its job is the
// array task <array id>_<task>, watched, canceled and re-attached to like
// any job.

func (k *slurmKind) arrays() *arrayBatcher[*slurmBatch] {
	k.arrOnce.Do(func() {
		k.arr = newArrayBatcher(func(a *slurmBatch, ps procSpec) (string, error) { return a.submitJob(ps) }, submitArray)
	})
	return k.arr
}

// submitArray writes each task's script and the array's job script, and
// submits them as one array job, with Slurm's throttle (%throttle) if
// throttle > 0.
func submitArray(tasks []*arrayTask[*slurmBatch], throttle int) ([]string, error) {
	base := tasks[0].ps.env
	var cases strings.Builder
	for i, t := range tasks {
		script := strings.TrimSuffix(t.ps.stdoutPath, ".out") + ".task.sh"
		text, err := taskScript(t.item.dir, base, t.ps)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(script, []byte(text), 0o700); err != nil {
			return nil, err
		}
		fmt.Fprintf(&cases, "%d) exec /bin/sh %s ;;\n", i, shQuote(script))
	}
	first := tasks[0]
	jobScript := strings.TrimSuffix(first.ps.stdoutPath, ".out") + ".array.sbatch"
	text := "#!/bin/sh\n# faber: an array of fan-out items; each task runs its item's task script\ncase \"$SLURM_ARRAY_TASK_ID\" in\n" +
		cases.String() + "esac\necho \"faber: no task $SLURM_ARRAY_TASK_ID in this array\" >&2\nexit 127\n"
	if err := os.WriteFile(jobScript, []byte(text), 0o700); err != nil {
		return nil, err
	}
	a := *first.item
	// faber-<run-id>-<fan-out>-a0: resume finds it as it finds every job
	// of the run.
	a.job = "faber-" + a.runID + "-" + a.step.FanOutOf + "-a0"
	rng := "0-" + strconv.Itoa(len(tasks)-1)
	if throttle > 0 {
		rng += "%" + strconv.Itoa(throttle)
	}
	args := []string{"--array=" + rng}
	args = append(args, a.sbatchArgs(jobScript, os.DevNull, os.DevNull, nil)...)
	id, err := runSbatch(args, base, a.dir)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(tasks))
	for i := range tasks {
		ids[i] = id + "_" + strconv.Itoa(i)
	}
	return ids, nil
}

// taskScript is the script of one array task: it runs the item's argv in
// its working directory, with exactly the environment faber built for it
// (the variables Slurm adds, SLURM_*, kept), appending to its log files.
// base is the environment sbatch had (the array's first item's): the task
// unsets what its own lacks and sets what differs.
func taskScript(dir string, base []string, ps procSpec) (string, error) {
	q := func(s string) (string, error) { return shQuote(s), nil }
	own := map[string]string{}
	for _, e := range ps.env {
		k, _, _ := strings.Cut(e, "=")
		own[k] = e
	}
	var b strings.Builder
	b.WriteString("#!/bin/sh\n# faber: one item of a fan-out array (its job script runs this)\n")
	qd, err := q(dir)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(&b, "cd %s || exit 127\n", qd)
	b.WriteString("exec env")
	var unset []string
	for _, e := range base {
		k, _, _ := strings.Cut(e, "=")
		if _, ok := own[k]; !ok && !strings.HasPrefix(k, "SLURM_") {
			unset = append(unset, k)
		}
	}
	sort.Strings(unset)
	for _, k := range unset {
		qk, err := q(k)
		if err != nil {
			return "", err
		}
		b.WriteString(" -u " + qk)
	}
	b.WriteString(" --")
	inBase := map[string]bool{}
	for _, e := range base {
		inBase[e] = true
	}
	for _, e := range ps.env {
		if inBase[e] {
			continue
		}
		qe, err := q(e)
		if err != nil {
			return "", err
		}
		b.WriteString(" " + qe)
	}
	for _, a := range ps.argv {
		qa, err := q(a)
		if err != nil {
			return "", err
		}
		b.WriteString(" " + qa)
	}
	qo, err := q(ps.stdoutPath)
	if err != nil {
		return "", err
	}
	qe, err := q(ps.stderrPath)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(&b, " >>%s 2>>%s\n", qo, qe)
	return b.String(), nil
}
