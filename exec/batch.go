package exec

import (
	"bytes"
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Batch schedulers (sbatch, qsub): an attempt is a job submitted to the
// scheduler, with no process of faber's waiting for it, so the job outlives
// faber. Its id is recorded with the step (StepState.Job); the job writes
// the attempt's log files itself, so echo, `logs --follow` and {error}
// work as for a local step. One poller per engine and run asks the
// scheduler about every job of the run in one call per tick.

// batchExecutor is an attempt executor whose attempts are scheduler jobs.
type batchExecutor interface {
	attemptExecutor
	// submit submits the job that runs ps (its argv, dir, env and log
	// files) and returns its id. A rejection returns the scheduler's
	// words as a *rejected error.
	submit(ps procSpec) (id string, err error)
	// poller is the run's poller of the engine's jobs.
	poller() *jobPoller
	// cancel asks job id to end: gracefully (its processes get SIGTERM; a
	// queued job is withdrawn), or at once (hard). last is what the
	// poller saw of it last.
	cancel(id string, last jobState, hard bool)
	// ended completes o from the job's final state js (its exit code is
	// set already): what the attempt used, its cause, an exit code the
	// engine corrects. It returns a reason for {error} when the engine,
	// not the step, decided how the attempt ended, else "".
	ended(id string, js jobState, o *outcome) string
	// ref is the job's reference in the step's record: "slurm:123".
	ref(id string) string
}

// rejected is a scheduler's refusal of a job at submission: msg is
// {error}, log what the scheduler's client printed (for the attempt's
// stderr log).
type rejected struct{ msg, log string }

func (e *rejected) Error() string { return e.msg }

// jobSubmitted is the state of a job the poller has not listed yet.
const jobSubmitted = "SUBMITTED"

// jobState is what the scheduler says of a job.
type jobState struct {
	state    string // the engine's word: PENDING, RUNNING, COMPLETED, ...
	done     bool   // the job ended: what follows is final
	exitCode int    // 128+N for death by signal N
	signal   int
	node     string // where it ran ("" when it never did)
	// vanished says the job left the scheduler with no record of how it
	// ended (done is true).
	vanished bool
	// raw is the scheduler's own id of an array task (Slurm's JobID of
	// <array>_<task>), which its processes carry; "" when it is the id.
	raw string
}

// Poll pacing: a tick after a change, then twice as long while nothing
// changes, up to pollMax. pollRecord bounds how long a job that left the
// queue is looked for in the engine's record (qacct's records appear
// seconds after a job leaves qstat).
const (
	pollMin    = 200 * time.Millisecond
	pollMax    = 5 * time.Second
	pollRecord = 60 * time.Second
)

// jobPoller watches the jobs of one engine for a run: each tick, one call
// (list) says how every job of the user stands; a job no longer listed is
// looked up in the engine's record (record, one call for all of them)
// until it is found there or pollRecord passes.
type jobPoller struct {
	list   func() (map[string]jobState, error)
	record func(ids []string) map[string]jobState // nil: the engine keeps none

	mu      sync.Mutex
	watched map[string]*jobWatch
	running bool
	wake    chan struct{}
	// listed is when the last listing that answered was asked for: what
	// it says of a job is no older than that.
	listed time.Time
	calls  atomic.Int64 // status calls made (list and record): bench/ reports them
}

type jobWatch struct {
	last    jobState
	gone    time.Time // when it was first missing from the list
	done    chan jobState
	changed bool
}

func newJobPoller(list func() (map[string]jobState, error), record func([]string) map[string]jobState) *jobPoller {
	return &jobPoller{list: list, record: record, watched: map[string]*jobWatch{}, wake: make(chan struct{}, 1)}
}

// watch starts watching job id; its final state arrives on the channel.
func (p *jobPoller) watch(id string) <-chan jobState {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := &jobWatch{done: make(chan jobState, 1), last: jobState{state: jobSubmitted}}
	p.watched[id] = w
	if !p.running {
		p.running = true
		go p.loop()
	} else {
		p.nudge()
	}
	return w.done
}

// unwatch stops watching job id (its attempt gave up on it).
func (p *jobPoller) unwatch(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.watched, id)
}

// left reports whether job id is missing from the engine's listing since
// the last tick (it ended, and the poller waits for its record).
func (p *jobPoller) left(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.watched[id]
	return w != nil && !w.gone.IsZero()
}

// listedSince reports whether a listing asked for after t has answered.
func (p *jobPoller) listedSince(t time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.listed.After(t)
}

// nudge asks for a listing now, instead of after the backed-off interval.
func (p *jobPoller) nudge() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// last is what the poller saw of job id last.
func (p *jobPoller) last(id string) jobState {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w := p.watched[id]; w != nil {
		return w.last
	}
	return jobState{}
}

func (p *jobPoller) loop() {
	interval := pollMin
	for {
		p.mu.Lock()
		if len(p.watched) == 0 {
			p.running = false
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		changed := p.tick()
		if changed {
			interval = pollMin
		} else {
			interval = min(interval*2, pollMax)
		}
		t := time.NewTimer(interval)
		select {
		case <-t.C:
		case <-p.wake:
			t.Stop()
			interval = pollMin
		}
	}
}

// tick asks the scheduler once (and its record once, for jobs that left
// it) and hands every job that ended its final state. It reports whether
// any job changed.
func (p *jobPoller) tick() (changed bool) {
	asked := time.Now()
	jobs, err := p.list()
	p.calls.Add(1)
	if err != nil {
		return false // the scheduler did not answer: ask again later
	}
	now := time.Now()
	var gone []string
	p.mu.Lock()
	p.listed = asked
	for id, w := range p.watched {
		js, ok := jobs[id]
		if !ok {
			if w.gone.IsZero() {
				w.gone = now
			}
			gone = append(gone, id)
			continue
		}
		w.gone = time.Time{}
		if js.state != w.last.state {
			changed = true
		}
		w.last = js
		if js.done {
			p.finish(id, w, js)
		}
	}
	p.mu.Unlock()
	if len(gone) == 0 {
		return changed
	}
	var recs map[string]jobState
	if p.record != nil {
		recs = p.record(gone)
		p.calls.Add(1)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range gone {
		w := p.watched[id]
		if w == nil {
			continue
		}
		if js, ok := recs[id]; ok && js.done {
			p.finish(id, w, js)
			changed = true
		} else if now.Sub(w.gone) >= pollRecord || (p.record == nil && now.Sub(w.gone) >= 2*pollMin) {
			// Missing from the list twice (or, with a record, for
			// pollRecord) and from the record: nothing says how it ended.
			p.finish(id, w, jobState{state: w.last.state, done: true, vanished: true, node: w.last.node})
			changed = true
		}
	}
	return changed
}

func (p *jobPoller) finish(id string, w *jobWatch, js jobState) {
	w.done <- js
	delete(p.watched, id)
}

// runBatch runs an attempt as a scheduler job: it submits the job, records
// its id, and waits for the poller to say how it ended, stopping it on a
// timeout or a stop as runProcLogs stops a process.
func runBatch(ps procSpec, ctrl *procCtrl, logs procLogs, b batchExecutor) (o outcome) {
	ended := o.begin(ps, b, ctrl, logs)
	defer func() { o.finished = time.Now() }()
	defer logs.close()
	if ended {
		return o
	}
	outF, errF := logs.out, logs.err
	id, err := b.submit(ps)
	if err != nil {
		if rj, ok := err.(*rejected); ok {
			fmt.Fprint(errF, rj.log)
			o.exitCode = 1
			o.execReason = rj.msg
		} else {
			fmt.Fprintf(errF, "faber: cannot submit the job: %v\n", err)
			o.cannotStart(err)
		}
		o.stderrTail = FileTail(errF, tailSize)
		return o
	}
	if ps.afterStart != nil {
		ps.afterStart()
	}
	if ps.onJob != nil {
		ps.onJob(b.ref(id))
	}
	o.finishBatch(ps, ctrl, b, id, outF, errF)
	return o
}

// finishBatch waits for job id of ps's attempt to end (stopping it on a
// timeout or a stop) and completes o from how it ended. Resume re-attaches
// to a job that outlived faber through it too.
func (o *outcome) finishBatch(ps procSpec, ctrl *procCtrl, b batchExecutor, id string, outF, errF *os.File) {
	poll := b.poller()
	done := poll.watch(id)
	var echoTick <-chan time.Time
	var fe *fileEcho
	if ps.onLine != nil && !ps.pipeLines && isRegular(outF) && isRegular(errF) {
		fe = newFileEcho(ps.onLine, outF, errF, ps.stdoutPath, ps.stderrPath)
		t := time.NewTicker(echoPoll)
		defer t.Stop()
		echoTick = t.C
	}
	// The timeout counts from the attempt's start (its submission), but
	// for a task the engine's throttle may hold back (an item of an array
	// pass) and a job re-attached to: from when the engine is seen to run
	// it, or, for a job re-attached to that already runs, from the
	// attempt's start, as faber cannot tell when it started.
	var timer, runWait <-chan time.Time
	var armed *time.Timer
	arm := func(from time.Time) {
		armed = time.NewTimer(max(ps.timeout-time.Since(from), 0))
		timer = armed.C
	}
	defer func() {
		if armed != nil {
			armed.Stop()
		}
	}()
	sawQueued := false
	// deadline is when the timeout first came: only a listing asked for
	// after it may say the job ran too long.
	var deadline time.Time
	switch {
	case ps.timeout <= 0:
	case ps.timeoutFrom == fromStart:
		arm(o.started)
	default:
		t := time.NewTicker(pollMin)
		defer t.Stop()
		runWait = t.C
	}
	grace := ps.grace
	if grace <= 0 {
		grace = 10 * time.Second
	}
	// stopping: the job was asked to end gracefully, then after grace at
	// once; once canceled hard, the wait for its end is bounded (a hard
	// stop does not wait: the next resume cancels what is left).
	var graceT, giveUp <-chan time.Time
	stopping, hard := false, false
	stop := func(now bool) {
		if now {
			if !hard {
				hard = true
				b.cancel(id, poll.last(id), true)
				giveUp = time.After(slurmGoneWait)
			}
			return
		}
		if !stopping {
			stopping = true
			b.cancel(id, poll.last(id), false)
			graceT = time.After(grace)
		}
	}
	stopCh, kill := ctrl.stop, ctrl.kill
	var js jobState
wait:
	for {
		select {
		case js = <-done:
			break wait
		case <-echoTick:
			fe.read(false)
		case <-runWait:
			switch js := poll.last(id); {
			case js.state == jobSubmitted:
				// Not polled yet.
			case js.node == "":
				sawQueued = true
			default:
				runWait = nil
				if sawQueued || ps.timeoutFrom == fromRun {
					arm(time.Now())
				} else {
					arm(o.started)
				}
			}
		case <-timer:
			timer = nil
			if deadline.IsZero() {
				deadline = time.Now()
			}
			if left := poll.left(id); left || !poll.listedSince(deadline) {
				// It left the engine's listing: it ended within its
				// timeout, and its record is on the way (qacct's comes
				// seconds later, at the poller's own pace). Or the last
				// listing is older than the deadline (the poller backs
				// off to pollMax while nothing changes): the job may
				// have ended since, so a listing asked for now decides.
				// Looked at again while it is not back.
				if !left {
					poll.nudge()
				}
				armed = time.NewTimer(pollMin)
				timer = armed.C
				break
			}
			o.timedOut = true
			stop(false)
		case <-stopCh:
			stopCh = nil
			stop(false)
		case <-graceT:
			graceT = nil
			stop(true)
		case <-kill:
			// A hard stop (a second Ctrl-C): the job is killed and not
			// waited for; the next resume cancels what is left of it.
			kill = nil
			stop(true)
			giveUp = time.After(0)
		case <-giveUp:
			last := poll.last(id)
			poll.unwatch(id)
			js = jobState{state: last.state, done: true, exitCode: 137, signal: 9, node: last.node}
			break wait
		}
	}
	if fe != nil {
		fe.read(true)
	}
	o.stderrTail = FileTail(errF, tailSize)
	o.exitCode, o.signal = js.exitCode, js.signal
	if o.timedOut {
		o.exitCode, o.signal = 124, 0
	}
	if r := ctrl.Reason(); r != "" && !o.timedOut {
		o.stoppedBy = r
	}
	o.execReason = b.ended(id, js, o)
	if ps.resultPath != "" {
		o.resultStatus, o.resultMessage, o.spent, o.spentBad = readResult(ps.resultPath)
	}
	readAgentSpent(ps, o)
}

// runningJobs are the steps of prior running an attempt whose job is
// engine's (StepState.Job "<engine>:<id>"), by job id.
func runningJobs(prior *Prior, engine string) map[string]string {
	byJob := map[string]string{}
	if prior == nil {
		return byJob
	}
	for _, st := range prior.Steps {
		if st.Status != StatusInProgress {
			continue
		}
		if j, ok := strings.CutPrefix(st.Job, engine+":"); ok {
			byJob[j] = st.ID
		}
	}
	return byJob
}

// keptJobs are the ids of engine's jobs of the steps in keep (those resume
// re-attaches to), which the end of a dead owner's leftovers spares.
func keptJobs(prior *Prior, keep map[string]bool, engine string) map[string]bool {
	kept := map[string]bool{}
	if prior == nil {
		return kept
	}
	for id := range keep {
		if st := prior.Steps[id]; st != nil {
			if j, ok := strings.CutPrefix(st.Job, engine+":"); ok {
				kept[j] = true
			}
		}
	}
	return kept
}

// batchEngine is what reattachJobs asks of a batch engine.
type batchEngine struct {
	name, title, lister string // "slurm", "Slurm", "squeue"
	// list is one call listing the jobs the scheduler knows.
	list func() (map[string]jobState, error)
	// recorded returns those of ids (gone from the listing) that the
	// engine's record still knows, ended.
	recorded func(ids []string) []string
	// recordWait is how long a job in neither the listing nor the record
	// is looked up again before resume gives it up: an engine that writes
	// its records a while after a job left the listing (Grid Engine's
	// accounting flush time) would otherwise have a job that ended while
	// faber was dead run again.
	recordWait time.Duration
	// mark is the environment entry that a job's processes carry.
	mark func(id string, js jobState) string
}

// reattachJobs is a batch engine's reattachable: the running steps of
// prior whose job the scheduler still lists, or its record knows, in job
// id order, with the mark of each job's processes. When the run has jobs
// recorded as running and the scheduler cannot say, resume must not go
// on: a job still running would run again beside it.
func reattachJobs(prior *Prior, e batchEngine) (steps, spare []string, err error) {
	byJob := runningJobs(prior, e.name)
	if len(byJob) == 0 {
		return nil, nil, nil
	}
	jobs, err := e.list()
	if err != nil {
		return nil, nil, fmt.Errorf("cannot ask %s about the run's %d running job(s) (%v); resuming now could run them twice: try again when %s answers", e.title, len(byJob), err, e.lister)
	}
	var missing []string
	for j := range byJob {
		if _, ok := jobs[j]; !ok {
			missing = append(missing, j)
		}
	}
	deadline := time.Now().Add(e.recordWait)
	for len(missing) > 0 {
		var still []string
		found := map[string]bool{}
		for _, j := range e.recorded(missing) {
			jobs[j] = jobState{done: true}
			found[j] = true
		}
		for _, j := range missing {
			if !found[j] {
				still = append(still, j)
			}
		}
		missing = still
		if len(missing) == 0 || !time.Now().Before(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	var ids []string
	for j := range byJob {
		if _, ok := jobs[j]; ok {
			ids = append(ids, j)
		}
	}
	sort.Strings(ids)
	for _, j := range ids {
		steps = append(steps, byJob[j])
		spare = append(spare, e.mark(j, jobs[j]))
	}
	return steps, spare, nil
}

// runClient runs a scheduler's client command name (sbatch, squeue, qsub,
// qstat, ...) bounded by timeout, so that a controller that does not answer
// cannot hold an attempt or a resume forever; env and dir are its
// environment and working directory (nil, "": faber's), waitDelay how long
// its output may stay open once it was killed. It returns what it printed.
func runClient(timeout, waitDelay time.Duration, env []string, dir, name string, args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := osexec.CommandContext(ctx, name, args...)
	cmd.Env, cmd.Dir, cmd.WaitDelay = env, dir, waitDelay
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// queryClient runs a client command that asks the scheduler (squeue,
// qstat, scancel, ...) and returns its stdout; its error names the
// command and what it said on stderr.
func queryClient(timeout time.Duration, name string, args ...string) (string, error) {
	stdout, stderr, err := runClient(timeout, time.Second, nil, "", name, args...)
	if err != nil {
		if msg := strings.TrimSpace(stderr); msg != "" {
			return stdout, fmt.Errorf("%s: %w: %s", name, err, msg)
		}
		return stdout, fmt.Errorf("%s: %w", name, err)
	}
	return stdout, nil
}

// clientMessages are the distinct lines a client that refused a job wrote
// on stderr, each trimmed and passed through clean ("" leaves it out), or
// err's text when there is none.
func clientMessages(stderr string, err error, clean func(line string) string) []string {
	var msgs []string
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if l = clean(strings.TrimSpace(l)); l != "" {
			msgs = appendNew(msgs, l)
		}
	}
	if len(msgs) == 0 {
		msgs = []string{err.Error()}
	}
	return msgs
}
