package exec

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// queuedJob is a batchExecutor whose one job waits in the queue for
// queued, then ends at once with exit 0 (it never lists as running), or,
// with forever, runs until canceled.
type queuedJob struct {
	poll     *jobPoller
	mu       sync.Mutex
	since    time.Time
	queued   time.Duration
	forever  bool
	canceled bool
}

func newQueuedJob(queued time.Duration, forever bool) *queuedJob {
	j := &queuedJob{queued: queued, since: time.Now(), forever: forever}
	j.poll = newJobPoller(func() (map[string]jobState, error) {
		j.mu.Lock()
		defer j.mu.Unlock()
		switch {
		case j.canceled:
			return map[string]jobState{"1": {state: "CA", done: true, exitCode: 143}}, nil
		case time.Since(j.since) < j.queued:
			return map[string]jobState{"1": {state: "PD"}}, nil
		case j.forever:
			return map[string]jobState{"1": {state: "R", node: "n1"}}, nil
		}
		return map[string]jobState{"1": {state: "CD", done: true}}, nil
	}, func([]string) map[string]jobState { return nil })
	return j
}

func (j *queuedJob) ownLine([]byte, bool) bool               { return false }
func (j *queuedJob) submit(procSpec) (string, error)         { return "1", nil }
func (j *queuedJob) poller() *jobPoller                      { return j.poll }
func (j *queuedJob) ended(string, jobState, *outcome) string { return "" }
func (j *queuedJob) ref(id string) string                    { return "q:" + id }
func (j *queuedJob) cancel(string, jobState, bool) {
	j.mu.Lock()
	j.canceled = true
	j.mu.Unlock()
}

// TestBatchTimeoutFromRun: a job's timeout counts from its submission, so
// a job that waits in the queue longer than its timeout is stopped there;
// a task the engine's throttle may hold back (fromRun) is not stopped
// while it waits in the queue: its timeout counts from when it runs, and
// stops it once it has run that long.
func TestBatchTimeoutFromRun(t *testing.T) {
	for _, c := range []struct {
		name     string
		from     int
		forever  bool
		timedOut bool
	}{
		{"from its submission", fromStart, false, true},
		{"from when it runs", fromRun, false, false},
		{"re-attached to, queued", fromReattach, false, false},
		{"from when it runs, then running too long", fromRun, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			j := newQueuedJob(time.Second, c.forever)
			ps := procSpec{timeout: 300 * time.Millisecond, grace: 50 * time.Millisecond, timeoutFrom: c.from,
				stdoutPath: filepath.Join(dir, "out"), stderrPath: filepath.Join(dir, "err")}
			out, _ := os.Create(ps.stdoutPath)
			errF, _ := os.Create(ps.stderrPath)
			o := runBatch(ps, newCtrl(), procLogs{out: out, err: errF}, j)
			if o.timedOut != c.timedOut {
				t.Errorf("timed out: %v, want %v (exit %d)", o.timedOut, c.timedOut, o.exitCode)
			}
		})
	}
}

// TestBatchTimeoutRecordLate: a job that left the engine's listing within
// its timeout ended then, though its record comes later (Grid Engine's
// qacct writes it seconds after): it is not timed out meanwhile.
func TestBatchTimeoutRecordLate(t *testing.T) {
	endsInTime(t, 200*time.Millisecond, 1500*time.Millisecond, 500*time.Millisecond)
}

// TestBatchTimeoutStaleListing: the poller backs off while nothing
// changes, so when a job's timeout comes its last listing may be seconds
// old. A job that ended after that listing, within its timeout, is not
// timed out: a listing asked for after the deadline decides. Here the
// job runs 1.6 s with a timeout of 2 s; the poller's listings come at
// about 0, 0.2, 0.6 and 1.4 s, then not before 3 s.
func TestBatchTimeoutStaleListing(t *testing.T) {
	endsInTime(t, 1600*time.Millisecond, 1600*time.Millisecond, 2*time.Second)
}

// endsInTime runs a job that lists as running for runs, then leaves the
// listing, its record (exit 0) coming after recordAfter, under timeout
// (more than runs): it must end on its own, neither timed out nor
// canceled.
func endsInTime(t *testing.T, runs, recordAfter, timeout time.Duration) {
	t.Helper()
	dir := t.TempDir()
	start := time.Now()
	j := &queuedJob{}
	j.poll = newJobPoller(func() (map[string]jobState, error) {
		if time.Since(start) < runs {
			return map[string]jobState{"1": {state: "r", node: "n1"}}, nil
		}
		return map[string]jobState{}, nil // it left the listing
	}, func([]string) map[string]jobState {
		if time.Since(start) < recordAfter {
			return nil // no record yet
		}
		return map[string]jobState{"1": {state: "ended", done: true}}
	})
	ps := procSpec{timeout: timeout, grace: 50 * time.Millisecond,
		stdoutPath: filepath.Join(dir, "out"), stderrPath: filepath.Join(dir, "err")}
	out, _ := os.Create(ps.stdoutPath)
	errF, _ := os.Create(ps.stderrPath)
	o := runBatch(ps, newCtrl(), procLogs{out: out, err: errF}, j)
	if o.timedOut || o.exitCode != 0 {
		t.Errorf("timed out %v, exit %d: want the job's own end (exit 0), which came before its timeout", o.timedOut, o.exitCode)
	}
	if j.canceled {
		t.Errorf("the job that had ended was canceled")
	}
}
