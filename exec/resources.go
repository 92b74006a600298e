package exec

import (
	"strconv"
	"strings"
	"time"

	"github.com/faber-run/faber/spec"
)

// Resources: what each attempt used, the limits it ran under, why it ended
// (README "Resources").

// Resources is what one attempt used and the limits it ran under. Source
// says where the figures come from: cgroup (the attempt's own cgroup: every
// process of it), rusage (wait4 of the group leader: the leader and the
// descendants it waited for; peak is the largest single process) or sacct
// (Slurm's accounting). Keys are in alphabetical order (events).
type Resources struct {
	CPUs             int    `json:"cpus,omitempty"`               // the CPU limit, when set
	MemoryLimitBytes int64  `json:"memory_limit_bytes,omitempty"` // the memory limit, when set
	PeakRSSBytes     int64  `json:"peak_rss_bytes"`
	Source           string `json:"source"`
	SysMs            int64  `json:"sys_ms"`
	TimeoutMs        int64  `json:"timeout_ms,omitempty"` // the time limit, when set
	UserMs           int64  `json:"user_ms"`
	WallMs           int64  `json:"wall_ms"`
}

// AttemptEnd is one finished attempt of a step: the items of `attempts` in
// `status --json` and the attempt_end of the step_status event that ends it.
type AttemptEnd struct {
	Attempt int    `json:"attempt"`
	Cause   string `json:"cause,omitempty"` // oom | timeout | rejected | budget
	// ExitCode is null for an attempt that ran no process (a rejection,
	// a start a spent budget refused, a value it needs missing).
	ExitCode  *int       `json:"exit_code"`
	Resources *Resources `json:"resources"`
	// Spent is what the attempt reported spending in $FABER_RESULT
	// (README "Budgets"); nil when nothing.
	Spent *Spent `json:"spent,omitempty"`
}

// Limits are the limits a step's next attempt runs with when they differ
// from its plan's: grown by a rule (memory_factor, timeout_factor) or set by
// a classification (--memory, --timeout).
type Limits struct {
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	TimeoutMs   int64 `json:"timeout_ms,omitempty"`
}

// Resource sources.
const (
	SourceCgroup = "cgroup"
	SourceRusage = "rusage"
	SourceSacct  = "sacct"
)

// limits is what one attempt may use; zero is no limit.
type limits struct {
	memory  int64
	cpus    int
	timeout time.Duration
}

// limitsOf is the step's limits for its next attempt: the plan's, with the
// step record's grown or classified ones over them.
func limitsOf(def *spec.Step, st *StepState) limits {
	l := limits{memory: def.Memory, cpus: def.CPUs, timeout: def.Timeout}
	if st != nil && st.Limits != nil {
		if st.Limits.MemoryBytes > 0 {
			l.memory = st.Limits.MemoryBytes
		}
		if st.Limits.TimeoutMs > 0 {
			l.timeout = time.Duration(st.Limits.TimeoutMs) * time.Millisecond
		}
	}
	return l
}

// usage is what the operating system or Slurm reported about an attempt.
type usage struct {
	user, sys time.Duration
	peakRSS   int64
	source    string
	oomKilled bool // the kernel (cgroup memory.events) or Slurm killed it for memory
}

// oomNear is how close to its memory limit a process killed by SIGKILL must
// have come for faber to count the kill as one for memory when nothing
// else says so (no cgroup events): 95% of the limit.
const oomNear = 0.95

// attemptCause says why an attempt ended, beside its exit code: CauseOOM
// when it was killed for memory (the cgroup's or Slurm's OOM report, or
// SIGKILL with its peak RSS at its limit), CauseTimeout when a time limit
// ended it (faber's timeout, or Slurm's), else "".
func attemptCause(o *outcome) string {
	switch {
	case o.stoppedBy != "":
		return ""
	case o.use.oomKilled:
		return spec.CauseOOM
	case o.timedOut || o.cause == spec.CauseTimeout:
		return spec.CauseTimeout
	case o.cause != "":
		return o.cause
	case o.lim.memory > 0 && (o.signal == 9 || o.exitCode == 137) && float64(o.use.peakRSS) >= oomNear*float64(o.lim.memory):
		return spec.CauseOOM
	}
	return ""
}

// attemptEnd is the record of the attempt that ended with o.
func attemptEnd(n int, o *outcome) *AttemptEnd {
	res := &Resources{
		CPUs:             o.lim.cpus,
		MemoryLimitBytes: o.lim.memory,
		PeakRSSBytes:     o.use.peakRSS,
		Source:           o.use.source,
		SysMs:            o.use.sys.Milliseconds(),
		TimeoutMs:        o.timeout.Milliseconds(),
		UserMs:           o.use.user.Milliseconds(),
		WallMs:           o.finished.Sub(o.started).Milliseconds(),
	}
	if res.Source == "" {
		res.Source = SourceRusage
	}
	end := &AttemptEnd{Attempt: n, Cause: attemptCause(o), Resources: res}
	if !o.noProcess {
		end.ExitCode = intp(o.exitCode)
	}
	if !o.spent.IsZero() {
		sp := o.spent
		end.Spent = &sp
	}
	return end
}

// ruleMatchesCause reports whether a rule's on: lists the cause.
func ruleMatchesCause(rule *spec.Rule, cause string) bool {
	if cause == "" {
		return false
	}
	for _, c := range rule.On {
		if c == cause {
			return true
		}
	}
	return false
}

// grow returns the limits of the retry a rule grants after an attempt that
// ran under cur, and whether they changed. A factor grows only a limit that
// is set: there is nothing to multiply otherwise.
func grow(rule *spec.Rule, cur limits) (limits, bool) {
	next := cur
	if rule.MemoryFactor > 0 && cur.memory > 0 {
		next.memory = spec.Grow(cur.memory, rule.MemoryFactor, rule.MaxMemory)
	}
	if rule.TimeoutFactor > 0 && cur.timeout > 0 {
		next.timeout = time.Duration(spec.Grow(int64(cur.timeout), rule.TimeoutFactor, int64(rule.MaxTimeout)))
		next.timeout = next.timeout.Round(time.Millisecond)
	}
	return next, next != cur
}

// cgroupName names the cgroup of attempt n of a step of run runID:
// faber-<run-id>-<step>-a<N>, with characters a path cannot hold replaced.
func cgroupName(runID, stepID string, n int) string {
	b := []byte("faber-" + runID + "-" + stepID + "-a" + strconv.Itoa(n))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	return string(b)
}

// cgroupRunID is the run id in the name of an attempt's cgroup
// (cgroupName), or "": a run id is <plan-name>-<YYYYMMDDTHHMMSS>-<4 hex>
// with a lower-case plan name, so its time stamp, the first "-<8
// digits>T<6 digits>-<4 hex>-" of the name, ends it.
func cgroupRunID(name string) string {
	rest, ok := strings.CutPrefix(name, "faber-")
	if !ok {
		return ""
	}
	const stamp = len("-20060102T150405-abcd-")
	for i := 1; i+stamp <= len(rest); i++ {
		s := rest[i : i+stamp]
		if s[0] == '-' && s[9] == 'T' && s[16] == '-' && s[21] == '-' && digits(s[1:9]) && digits(s[10:16]) && lowerHex(s[17:21]) {
			return rest[:i+stamp-1]
		}
	}
	return ""
}

func digits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func lowerHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// FormatSize writes a byte count as faber shows sizes (spec.FormatSize), for
// the renderers, which know exec's types only.
func FormatSize(n int64) string { return spec.FormatSize(n) }

// FormatDuration is faber's one human form of a duration (README
// "Durations and times"): 268ms below a second, 3.7s below a minute,
// 3m07s below an hour, then 1h02m03s. The machine form is whole
// milliseconds (duration_ms) in JSON.
func FormatDuration(d time.Duration) string { return string(AppendDuration(nil, d)) }

// AppendDuration appends FormatDuration(d) to b.
func AppendDuration(b []byte, d time.Duration) []byte {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Second:
		return append(strconv.AppendInt(b, d.Milliseconds(), 10), "ms"...)
	case d < time.Minute:
		tenths := int64(d / (100 * time.Millisecond))
		b = strconv.AppendInt(b, tenths/10, 10)
		return append(b, '.', byte('0'+tenths%10), 's')
	}
	secs := int64(d / time.Second)
	h, m, s := secs/3600, secs/60%60, secs%60
	if h > 0 {
		b = appendTwo(append(strconv.AppendInt(b, h, 10), 'h'), m)
	} else {
		b = strconv.AppendInt(b, m, 10)
	}
	return append(appendTwo(append(b, 'm'), s), 's')
}

// appendTwo appends n, 0 to 99, as two digits.
func appendTwo(b []byte, n int64) []byte { return append(b, byte('0'+n/10), byte('0'+n%10)) }

// PeakExact reports whether the peak memory is the attempt's own: measured
// by its cgroup or by Slurm's accounting. From rusage (wait4) it is an
// upper bound: on Linux a child started by faber counts faber's own pages
// until it execs (Go starts children with vfork), so a trivial step shows
// faber's size, tens of MiB.
func (r *Resources) PeakExact() bool {
	return r != nil && (r.Source == SourceCgroup || r.Source == SourceSacct)
}

// PeakText is the peak memory as the views print it: "164MiB" when it is
// the attempt's own (PeakExact), "≤38MiB" when it is an upper bound.
func (r *Resources) PeakText() string { return string(r.AppendPeak(nil)) }

// AppendPeak appends PeakText() to b.
func (r *Resources) AppendPeak(b []byte) []byte {
	if r == nil {
		return b
	}
	if !r.PeakExact() {
		b = append(b, "≤"...)
	}
	return spec.AppendSize(b, r.PeakRSSBytes)
}
