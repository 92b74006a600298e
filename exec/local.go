package exec

import (
	osexec "os/exec"

	"github.com/faber-run/faber/spec"
)

// executorLocal is the value of `executor:` that runs steps on this
// machine, the default.
const executorLocal = "local"

// localKind runs attempts on this machine, each as its own process group,
// in a cgroup of its own when it has a memory or CPU limit (SPEC §3).
type localKind struct{}

func (localKind) name() string  { return executorLocal }
func (localKind) title() string { return "local" }

func (localKind) attempt(runID string, s *spec.Step, n int, _ string, lim limits) attemptExecutor {
	return &localAttempt{cgName: cgroupName(runID, s.ID, n), lim: lim}
}

func (localKind) describe(_, _ string, _ *spec.Step, _ string, argv []string, _ int) (wrapped, prefix []string) {
	return argv, nil
}

// reattachable: a process of a dead faber is not waited for; it is ended.
func (localKind) reattachable(*Prior) (steps, spare []string, err error) { return nil, nil, nil }

// endLeftovers terminates the process groups a dead owner's active steps
// left (each checked against its leader's start time), the processes that
// carry the run's FABER_RUN_ID (but those spare marks), and the cgroups of
// its attempts, whatever still ran in them killed.
func (localKind) endLeftovers(runID string, prior *Prior, keep map[string]bool, spare []string) int {
	if prior != nil {
		for _, st := range prior.Steps {
			if Status(st.Status).Active() && !keep[st.ID] {
				killLeftoverGroup(st.PGID, st.PStart)
			}
		}
	}
	killRunProcesses(runID, spare)
	removeRunCgroups(runID)
	return 0
}

// check: this machine has what it needs.
func (localKind) check([]*spec.Step) error { return nil }

// definition: a local step's hash is its command alone.
func (localKind) definition(*spec.Step) (string, any) { return "", nil }

// localAttempt is one process group on this machine. With a memory or CPU
// limit (and a name, which only step attempts have) it owns a cgroup that
// enforces the limit and measures the attempt.
type localAttempt struct {
	cgName string
	lim    limits
	cg     *cgroup
}

func (a *localAttempt) wrap(argv []string) []string { return argv }
func (a *localAttempt) writesLogs() bool            { return true }

func (a *localAttempt) setUp() (err error) {
	if a.cgName != "" && (a.lim.memory > 0 || a.lim.cpus > 0) {
		a.cg, err = newCgroup(a.cgName, a.lim)
	}
	return err
}

func (a *localAttempt) command(argv []string, newCmd func([]string) *osexec.Cmd) *osexec.Cmd {
	cmd := newCmd(a.cg.wrap(argv))
	a.cg.prepare(cmd)
	return cmd
}

func (a *localAttempt) terminate(grp procGroup) { _ = grp.signal(false) }
func (a *localAttempt) kill(grp procGroup)      { _ = grp.signal(true) }

// finish adds what the cgroup measured (peak memory, CPU time, an OOM
// kill) to the process's own figures.
func (a *localAttempt) finish(_ []string, o *outcome, _ <-chan struct{}) string {
	a.cg.measure(&o.use)
	return ""
}

func (a *localAttempt) ownLine([]byte, bool) bool { return false }
func (a *localAttempt) release()                  { a.cg.remove() }
