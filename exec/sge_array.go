package exec

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Fan-outs as Grid Engine array jobs (batch_array.go gathers the items):
// the items started together are one `qsub -t 1-<k>`, not k jobs. Each
// item keeps its own job script (attempt-<N>.sge beside its logs, the one
// a job of its own would run: its environment, working directory, argv,
// the -notify and 99/100 handling), which the array's script runs by
// SGE_TASK_ID with the item's log files as its output; its job is the
// array task <array id>.<task>, which qstat lists, qacct records and qdel
// deletes as such, and which is watched, canceled and re-attached to like
// any job. The task's processes carry FABER_SGE_JOB=<id>.<task>, by which
// a resume that re-attaches to it spares them.

func (k *sgeKind) arrays() *arrayBatcher[*sgeBatch] {
	k.arrOnce.Do(func() {
		k.arr = newArrayBatcher(func(a *sgeBatch, ps procSpec) (string, error) { return a.submitJob(ps) }, sgeSubmitArray)
	})
	return k.arr
}

// sgeSubmitArray writes each task's job script and the array's script,
// and submits them as one array job, with Grid Engine's throttle (-tc
// throttle) if throttle > 0.
func sgeSubmitArray(tasks []*arrayTask[*sgeBatch], throttle int) ([]string, error) {
	var cases strings.Builder
	var arrayScript string // beside the first item's logs
	for i, t := range tasks {
		out, errPath, err := sgeLogPaths(t.ps)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			arrayScript = strings.TrimSuffix(out, ".out") + ".array.sge"
		}
		script := strings.TrimSuffix(out, ".out") + ".sge"
		if err := os.WriteFile(script, []byte(sgeScript(t.item.job, t.item.dir, t.ps.env, t.ps.argv)), 0o700); err != nil {
			return nil, err
		}
		fmt.Fprintf(&cases, "%d) exec /bin/sh %s >>%s 2>>%s ;;\n", i+1, shQuote(script), shQuote(out), shQuote(errPath))
	}
	first := tasks[0]
	text := "#!/bin/sh\n# faber: an array of fan-out items; each task runs its item's job script\n" +
		"FABER_SGE_JOB=$JOB_ID.$SGE_TASK_ID\nexport FABER_SGE_JOB\ncase \"$SGE_TASK_ID\" in\n" +
		cases.String() + "esac\necho \"faber: no task $SGE_TASK_ID in this array\" >&2\nexit 127\n"
	if err := os.WriteFile(arrayScript, []byte(text), 0o700); err != nil {
		return nil, err
	}
	a := first.item
	// faber-<run-id>-<fan-out>-a0: resume finds it as it finds every job
	// of the run.
	name := sgeJobName(a.runID, a.step.FanOutOf, 0)
	args := []string{"-t", "1-" + strconv.Itoa(len(tasks))}
	if throttle > 0 {
		args = append(args, "-tc", strconv.Itoa(throttle))
	}
	args = append(args, qsubArgs(name, a.step, a.lim, os.DevNull, os.DevNull, arrayScript)...)
	id, err := runQsub(args, first.ps.env, a.step, a.lim)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(tasks))
	for i := range tasks {
		ids[i] = id + "." + strconv.Itoa(i+1)
	}
	return ids, nil
}
