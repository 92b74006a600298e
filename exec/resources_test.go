package exec

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/faber-run/faber/spec"
)

func TestAttemptCause(t *testing.T) {
	lim := limits{memory: 100 << 20}
	cases := []struct {
		name string
		o    outcome
		want string
	}{
		{"cgroup oom_kill", outcome{exitCode: 137, signal: 9, use: usage{oomKilled: true}}, spec.CauseOOM},
		{"sigkill at the limit", outcome{exitCode: 137, signal: 9, lim: lim, use: usage{peakRSS: 99 << 20}}, spec.CauseOOM},
		{"sigkill far below", outcome{exitCode: 137, signal: 9, lim: lim, use: usage{peakRSS: 10 << 20}}, ""},
		{"sigkill, no limit", outcome{exitCode: 137, signal: 9, use: usage{peakRSS: 1 << 30}}, ""},
		{"exit 1 at the limit", outcome{exitCode: 1, lim: lim, use: usage{peakRSS: 100 << 20}}, ""},
		{"faber timeout", outcome{exitCode: 124, timedOut: true}, spec.CauseTimeout},
		{"slurm time limit", outcome{exitCode: 124, cause: spec.CauseTimeout}, spec.CauseTimeout},
		{"stopped by faber", outcome{exitCode: 130, stoppedBy: reasonCancel, use: usage{oomKilled: true}}, ""},
		{"plain failure", outcome{exitCode: 2}, ""},
	}
	for _, c := range cases {
		if got := attemptCause(&c.o); got != c.want {
			t.Errorf("%s: cause %q, want %q", c.name, got, c.want)
		}
	}
}

func TestMatchRuleCause(t *testing.T) {
	oom := &spec.Rule{On: []string{spec.CauseOOM}, Index: 0}
	codes := &spec.Rule{ExitCodes: []int{137}, Index: 1}
	all := &spec.Rule{MatchAll: true, Index: 2}
	fh := &spec.FailureHandler{Rules: []*spec.Rule{codes, oom, all}}
	if got := MatchRuleCause(fh, 137, false, nil, spec.CauseOOM); got != codes {
		t.Errorf("rule order: got %v", got)
	}
	fh.Rules = []*spec.Rule{oom, codes, all}
	if got := MatchRuleCause(fh, 137, false, nil, spec.CauseOOM); got != oom {
		t.Errorf("on: [oom]: got %v", got)
	}
	if got := MatchRuleCause(fh, 137, false, nil, ""); got != codes {
		t.Errorf("no cause: got %v", got)
	}
	if got := MatchRuleCause(fh, 124, false, nil, spec.CauseTimeout); got != all {
		t.Errorf("timeout falls to the catch-all: got %v", got)
	}
}

func TestGrow(t *testing.T) {
	r := &spec.Rule{MemoryFactor: 1.5, MaxMemory: 200 << 20, TimeoutFactor: 2, MaxTimeout: time.Hour}
	next, ok := grow(r, limits{memory: 100 << 20, timeout: 40 * time.Minute})
	if !ok || next.memory != 150<<20 || next.timeout != time.Hour {
		t.Errorf("grow: %+v %v", next, ok)
	}
	next, ok = grow(r, limits{})
	if ok || next != (limits{}) {
		t.Errorf("no limits to grow: %+v %v", next, ok)
	}
}

func TestSlurmOOMAndUsage(t *testing.T) {
	o := &outcome{exitCode: 137, stderrTail: []byte("slurmstepd: error: Detected 1 oom-kill event(s) in StepId=12.0. Some of your processes may have been killed by the cgroup out-of-memory handler.\nsrun: error: node1: task 0: Out Of Memory\n")}
	slurmFinish("job", nil, o, func(string) (string, string) { return "OUT_OF_MEMORY", "node1" }, nil)
	if attemptCause(o) != spec.CauseOOM {
		t.Errorf("slurm oom not recognised")
	}
	o = &outcome{exitCode: 1}
	slurmUsage("job", o, func(string) string {
		return "12|OUT_OF_MEMORY|0|01:02.500|00:01.250\n12.0|OUT_OF_MEMORY|2048K||\n12.1|COMPLETED|1.5M|00:00:01|0:0\n"
	})
	if o.use.source != SourceSacct || o.use.peakRSS != 2048<<10 || o.use.user != 62500*time.Millisecond || o.use.sys != 1250*time.Millisecond || !o.use.oomKilled {
		t.Errorf("sacct usage: %+v", o.use)
	}
	if d, ok := slurmDuration("1-02:03:04"); !ok || d != 26*time.Hour+3*time.Minute+4*time.Second {
		t.Errorf("slurmDuration: %v %v", d, ok)
	}
	if got := slurmMem(1536 << 20); got != "1536M" {
		t.Errorf("slurmMem: %s", got)
	}
	s := &spec.Step{ID: "a", StepBody: &spec.StepBody{Timeout: 90 * time.Second, Slurm: &spec.Slurm{Mem: "1G", Time: "5"}}}
	argv := slurmArgv("j", "/d", s, limits{memory: 3 << 29, cpus: 2, timeout: 3 * time.Minute}, []string{"x"})
	got := flagValue(argv, "--mem") + " " + flagValue(argv, "--cpus-per-task") + " " + flagValue(argv, "--time")
	if got != "1536M 2 3" {
		t.Errorf("srun options: %q (%v)", got, argv)
	}
}

func TestCgroupRunID(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"faber-left-20261125T195325-374e-a-a1", "left-20261125T195325-374e"},
		{"faber-my-plan-20261125T195325-374e-each_data_20261125T195325-aaaa-x-a12", "my-plan-20261125T195325-374e"},
		{cgroupName("p.q_r-20260101T000000-00ff", "s", 3), "p.q_r-20260101T000000-00ff"},
		{"faber-probe-1234", ""},
		{"faber-x-20261125T195325-374E-a-a1", ""},
		{"other-x-20261125T195325-374e-a-a1", ""},
		{"faber--20261125T195325-374e-a-a1", ""},
	} {
		if got := cgroupRunID(c.name); got != c.want {
			t.Errorf("cgroupRunID(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

// formatDurationFmt is FormatDuration as it was written with fmt, before
// it appended: the oracle of TestFormatDuration.
func formatDurationFmt(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", float64(d.Truncate(100*time.Millisecond))/float64(time.Second))
	}
	d = d.Truncate(time.Second)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	if h > 0 {
		return fmt.Sprintf("%dh%02dm%02ds", h, m, s)
	}
	return fmt.Sprintf("%dm%02ds", m, s)
}

// FormatDuration (and AppendDuration, after what is in the buffer) write
// what the fmt version wrote, at every unit's edges and at random.
func TestFormatDuration(t *testing.T) {
	ds := []time.Duration{-time.Hour, -1, 0, 1, time.Millisecond - 1, time.Millisecond, 999 * time.Millisecond,
		time.Second - 1, time.Second, 1050 * time.Millisecond, 9950 * time.Millisecond, time.Minute - 1, time.Minute,
		time.Hour - 1, time.Hour, 100*time.Hour + 59*time.Minute + 59*time.Second, 1<<63 - 1}
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		ds = append(ds, time.Duration(r.Int64N(int64(1)<<r.IntN(62)+1)))
	}
	for _, d := range ds {
		want := formatDurationFmt(d)
		if got := FormatDuration(d); got != want {
			t.Fatalf("FormatDuration(%d) = %q, want %q", d, got, want)
		}
		if got := string(AppendDuration([]byte("x\t"), d)); got != "x\t"+want {
			t.Fatalf("AppendDuration(%d) = %q, want %q", d, got, "x\t"+want)
		}
	}
}
