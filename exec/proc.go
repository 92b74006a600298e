package exec

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/faber-run/faber/internal/regfile"
	"github.com/faber-run/faber/spec"
)

// tailSize is how much of stderr is kept in memory: enough for {error} and
// for stderr_matches, which SPEC §10 matches against the last 64 KiB.
const tailSize = 64 << 10

// When a batch job's timeout starts counting (procSpec.timeoutFrom).
const (
	fromStart = iota
	fromRun
	fromReattach
)

// procSpec describes one process faber runs: a step attempt, a recovery
// script, a handler or the end step.
type procSpec struct {
	argv       []string
	dir        string
	env        []string
	stdoutPath string
	stderrPath string
	resultPath string
	// outputsPath is $FABER_OUTPUTS of a step's attempt ("" for other
	// processes): read once the attempt succeeded (readOutputs).
	outputsPath string
	timeout     time.Duration // 0 = none
	grace       time.Duration
	// onLine, if set, receives each complete output line (and a final partial
	// one); it must not block. Lines are read back from the log files
	// (echo.go), or, with pipeLines (a sub-plan's event stream), taken from
	// pipes as they come.
	onLine    func(stream string, line []byte)
	pipeLines bool
	// onStart is called once the process runs, with its group id and the
	// leader's start token, before the process can have done much.
	onStart func(pgid int, pstart string)
	// onJob, if set, is called once a batch scheduler accepted the
	// attempt's job, with the job's reference (batchExecutor.ref).
	onJob func(job string)
	// exec runs the process where its step's executor says (executor.go);
	// nil is this machine, with no cgroup (handlers, recovery scripts).
	exec attemptExecutor
	// onLogErr, if set, is called (once, from any goroutine) when a log
	// file cannot be written: the run's state dir is in trouble.
	onLogErr func(error)
	// shellArgv, set when argv runs a step's script without a shell
	// (direct.go), is the same script through the shell: what runs if
	// argv cannot start.
	shellArgv []string
	// freshResult says no result file can be there yet (attempt 1 of a
	// step that never started): openLogs need not remove one.
	freshResult bool
	// afterStart, if set, is called once the process runs.
	afterStart func()
	// timeoutFrom says when a batch job's timeout starts counting
	// (finishBatch): fromStart (the attempt's start), fromRun (when the
	// engine runs it: a task its throttle may hold back) or fromReattach.
	timeoutFrom int
	// pass, set for an item of a fan-out that one scheduling pass starts
	// beside others, makes it one task of their array (batch_array.go).
	pass *passMember
	// lim is the attempt's memory and CPU limit (its timeout is timeout).
	lim limits
	// stdin, if set, is the process's standard input (a notification's
	// event); else it reads /dev/null.
	stdin []byte
	// agentUsage: with no usage in its result file, what the process
	// spent is read from an agent's result line, the last of its stdout
	// (agentSpent).
	agentUsage bool
}

// outcome is what happened to a process.
type outcome struct {
	exitCode  int
	signal    int
	timedOut  bool
	stoppedBy string // "" | reasonCancel | reasonInterrupt: faber itself stopped it
	startErr  error
	// logErr is set when the process's output could not be written to its
	// log files (opened, or a write failed): the log is not whole.
	logErr error
	// sysErr is set (with startErr) when the process could not start for
	// want of faber's own resources (Scarce): the attempt does not count.
	sysErr        error
	resultStatus  string // from $FABER_RESULT: "", "success" or "failure"
	resultMessage string
	// spent is what the process reported spending in $FABER_RESULT;
	// spentBad names the usage fields it wrote wrong (README "Budgets").
	spent      Spent
	spentBad   string
	stderrTail []byte
	timeout    time.Duration
	started    time.Time
	finished   time.Time
	// exec is the executor that ran the attempt: {error} skips its own
	// stderr lines, and execReason, when set, says how the executor ended
	// the attempt.
	exec       attemptExecutor
	execReason string
	// cacheOuts are the digests of a cached step's outputs after it
	// succeeded; cacheErr says why they could not be taken.
	cacheOuts map[string]string
	cacheErr  error
	// use is what the attempt used, lim the limits it ran under; cause is
	// set by an executor that knows why the attempt ended (CauseOOM,
	// CauseTimeout).
	use   usage
	lim   limits
	cause string
	// cgErr says why an attempt with a memory or CPU limit got no cgroup.
	cgErr error
	// outputs are what a successful attempt published ($FABER_OUTPUTS).
	outputs []Output
	// noProcess: the attempt failed before a process could start, for a
	// reason of the plan's (an output it uses is missing, or its when:
	// cannot be evaluated): it has no exit code, and only match_all rules
	// match it, as a result-file failure.
	noProcess bool
}

// failed reports whether the process counts as failed (SPEC §3).
func (o *outcome) failed() bool {
	return o.startErr != nil || o.exitCode != 0 || o.timedOut || o.resultStatus == "failure"
}

// errorText is {error} for this outcome, per SPEC §3: the result message, else
// the last non-blank stderr line, else a description of how it ended.
func (o *outcome) errorText() string {
	if o.resultMessage != "" {
		return clip(o.resultMessage)
	}
	if o.execReason != "" {
		return clip(o.execReason)
	}
	var skip func([]byte) bool
	if o.exec != nil {
		stopped := o.timedOut || o.stoppedBy != ""
		skip = func(l []byte) bool { return o.exec.ownLine(l, stopped) }
	}
	l := lastLine(o.stderrTail, skip)
	if attemptCause(o) == spec.CauseOOM && (l == "" || shellKillReport([]byte(l))) {
		return fmt.Sprintf("out of memory: killed at its %s limit", spec.FormatSize(o.lim.memory))
	}
	if l != "" {
		return l
	}
	switch {
	case o.startErr != nil:
		return "cannot start: " + o.startErr.Error()
	case o.timedOut:
		return "timed out after " + o.timeout.String()
	case o.signal != 0:
		return "killed by signal " + signalName(o.signal)
	case o.resultStatus == "failure":
		return "result file reported failure"
	}
	return fmt.Sprintf("exit status %d", o.exitCode)
}

// clip cuts s to at most 1000 bytes, back to a character boundary.
func clip(s string) string {
	const max = 1000
	if len(s) <= max {
		return s
	}
	s = s[:max]
	if i := lastStart(s); !utf8.FullRuneInString(s[i:]) {
		s = s[:i]
	}
	return s
}

// lastStart returns the index of the start byte of the last (possibly partial)
// UTF-8 sequence in s.
func lastStart(s string) int {
	i := len(s) - 1
	for i > 0 && len(s)-i < utf8.UTFMax && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

// lastLine returns the last line of b holding a non-space character, without
// its line ending (one trailing \r dropped), clipped to 1000 bytes. Lines
// for which skip (if not nil) reports true are passed over.
func lastLine(b []byte, skip func([]byte) bool) string {
	for len(b) > 0 {
		i := bytes.LastIndexByte(b[:len(b)-1], '\n')
		line := b[i+1:]
		b = b[:i+1]
		if i < 0 {
			b = nil
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(bytes.TrimSpace(line)) > 0 && (skip == nil || !skip(line)) {
			return clip(string(line))
		}
	}
	return ""
}

// Stop reasons.
const (
	reasonCancel    = "cancel"
	reasonInterrupt = "interrupt"
)

// procCtrl lets the scheduler stop a running process.
type procCtrl struct {
	mu     sync.Mutex
	reason string
	stop   chan struct{}
	kill   chan struct{}
}

func newCtrl() *procCtrl {
	return &procCtrl{stop: make(chan struct{}), kill: make(chan struct{})}
}

// Stop asks for a graceful stop (SIGTERM, then SIGKILL after the grace period);
// hard asks for SIGKILL at once. The first reason given wins.
func (c *procCtrl) Stop(reason string, hard bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reason == "" {
		c.reason = reason
		close(c.stop)
	}
	if hard {
		select {
		case <-c.kill:
		default:
			close(c.kill)
		}
	}
}

func (c *procCtrl) Reason() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reason
}

// openLog creates a log file, open for reading too (the stderr tail may be
// read back); it never truncates an existing file. The step's log directory
// is made only when it is missing, and newDir reports that it was made just
// now: on a slow file system each extra metadata call costs a step
// measurably.
func openLog(path string) (f *os.File, newDir bool, err error) {
	f, err = os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o600)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return f, false, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, false, err
	}
	f, err = os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o600)
	return f, true, err
}

// devNull is the standard input of every process, opened once: os/exec
// would open /dev/null for each process it starts.
var devNull = sync.OnceValue(func() *os.File {
	f, err := os.Open(os.DevNull)
	if err != nil {
		return nil // os/exec then tries itself, and says why it cannot
	}
	return f
})

// workDirProblem says why dir cannot be a process's working directory, or
// nil when it can (or is "", faber's own).
func workDirProblem(dir string) error {
	if dir == "" {
		return nil
	}
	fi, err := os.Stat(dir)
	switch {
	case err != nil:
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("working directory %s: %w", dir, err)
	case !fi.IsDir():
		return fmt.Errorf("working directory %s: %w", dir, syscall.ENOTDIR)
	}
	return nil
}

// procLogs are a process's log files, opened (openLogs) before it starts.
type procLogs struct {
	out, err *os.File
	fail     error // why they could not be opened (the process cannot start)
}

// openLogs creates the log files of ps (never truncating one) and removes a
// stale result file: all a process needs before it starts.
func openLogs(ps procSpec) (l procLogs) {
	if ps.freshResult && aheadFiles {
		// Attempt 1 of a step that never started: its files may have
		// been made ahead (makeLogsAhead). They take their names unless
		// something is there already (then that is opened, as always,
		// and the file made ahead goes).
		for _, p := range [...]string{ps.stdoutPath, ps.stderrPath} {
			if err := renameNoReplace(aheadName(p), p); errors.Is(err, os.ErrExist) {
				_ = os.Remove(aheadName(p))
			}
		}
	}
	l, newDir := openLogPair(ps.stdoutPath, ps.stderrPath)
	if l.fail == nil && ps.resultPath != "" && !newDir && !ps.freshResult {
		// A fresh path each attempt; never trust a stale one (a new log
		// directory holds none).
		_ = os.Remove(ps.resultPath)
		if ps.outputsPath != "" {
			_ = os.Remove(ps.outputsPath)
		}
	}
	return l
}

// openLogPair opens a process's two log files (openLog); newDir says their
// directory was made just now.
func openLogPair(outPath, errPath string) (l procLogs, newDir bool) {
	out, newDir, err := openLog(outPath)
	if err != nil {
		l.fail = err
		return l, false
	}
	errF, _, err := openLog(errPath) // read back by fileTail
	if err != nil {
		out.Close()
		l.fail = err
		return l, false
	}
	return procLogs{out: out, err: errF}, newDir
}

// close closes the files of logs, when they were opened.
func (l procLogs) close() {
	if l.fail == nil {
		l.out.Close()
		l.err.Close()
	}
}

// begin fills in what o knows before ps's attempt starts on executor ex
// (its limits, its start) and reports whether the attempt ends before it
// starts: its log files could not be opened, or a stop came first.
func (o *outcome) begin(ps procSpec, ex attemptExecutor, ctrl *procCtrl, logs procLogs) (ended bool) {
	o.exec = ex
	o.timeout = ps.timeout
	o.lim = ps.lim
	o.lim.timeout = ps.timeout
	o.started = time.Now()
	if err := logs.fail; err != nil {
		o.startErr, o.logErr, o.exitCode = err, err, 127
		if Scarce(err) {
			o.sysErr = err
		}
		return true
	}
	if r := ctrl.Reason(); r != "" {
		o.stoppedBy = r
		o.exitCode = 130
		return true
	}
	return false
}

// runProc runs one process to its end. It never returns before every process
// of the group is gone (or was sent SIGKILL) and the output is written.
func runProc(ps procSpec, ctrl *procCtrl) outcome {
	return runProcLogs(ps, ctrl, openLogs(ps))
}

// runProcLogs is runProc with the log files opened already (openLogs), which
// it closes.
func runProcLogs(ps procSpec, ctrl *procCtrl, logs procLogs) (o outcome) {
	ex, ok := ps.exec.(processExecutor)
	if !ok {
		ex = &localAttempt{} // handlers, recovery scripts: this machine
	}
	ended := o.begin(ps, ex, ctrl, logs)
	defer func() { o.finished = time.Now() }()
	defer logs.close()
	if ended {
		return o
	}
	outF, errF := logs.out, logs.err

	// Nobody wants the lines as they come: the process writes to its log
	// files itself, and {error} comes from the end of the stderr file.
	// Otherwise pipes, pumped into the files and to onLine.
	// A log that is no regular file (a device, a FIFO) is written through a
	// pipe, so that a write faber cannot make is seen (and stops the run).
	regular := isRegular(outF) && isRegular(errF)
	echo := ps.onLine != nil && !ps.pipeLines && ex.writesLogs() && regular
	direct := (ps.onLine == nil && regular) || echo
	var outR, outW, errR, errW *os.File
	var err error
	closePipes := func() {
		for _, f := range []*os.File{outR, outW, errR, errW} {
			if f != nil {
				f.Close()
			}
		}
	}
	if direct {
		outW, errW = outF, errF
	} else {
		if outR, outW, err = os.Pipe(); err == nil {
			errR, errW, err = os.Pipe()
		}
		if err != nil {
			closePipes()
			// The pipes are faber's: whatever failed is not the step's.
			o.startErr, o.sysErr, o.exitCode = err, err, 127
			fmt.Fprintf(errF, "faber: cannot start the process: %v\n", err)
			return o
		}
	}
	o.cgErr = ex.setUp()
	defer ex.release() // after the group's SIGKILL below
	cmd, prog, err := startProcess(ps, ex, outW, errW)
	if err != nil {
		if !direct {
			closePipes()
		}
		o.cannotStart(err)
		fmt.Fprintf(errF, "faber: cannot start %s: %v\n", prog, err)
		return o
	}
	if !direct {
		outW.Close()
		errW.Close()
	}
	grp := newGroup(cmd)
	defer grp.release()
	if ps.afterStart != nil {
		ps.afterStart()
	}
	pgid := grp.id
	// The group is recorded for resume to kill if faber dies meanwhile. An
	// attempt that ends within groupRecordDelay is never recorded: on Linux
	// resume finds such leftovers by FABER_RUN_ID, and a short step saves a
	// state commit and a read of /proc.
	var record <-chan time.Time
	if ps.onStart != nil {
		if groupRecordDelay <= 0 {
			ps.onStart(pgid, ProcStart(cmd.Process.Pid))
		} else {
			t := time.NewTimer(groupRecordDelay)
			defer t.Stop()
			record = t.C
		}
	}

	var echoTick <-chan time.Time
	var fe *fileEcho
	if echo {
		fe = newFileEcho(ps.onLine, outF, errF, ps.stdoutPath, ps.stderrPath)
		t := time.NewTicker(echoPoll)
		defer t.Stop()
		echoTick = t.C
	}

	var tail tailBuf
	var wg sync.WaitGroup
	var logErr [2]error
	if !direct {
		var once sync.Once
		onErr := func(err error) {
			if ps.onLogErr != nil {
				once.Do(func() { ps.onLogErr(err) })
			}
		}
		wg.Add(2)
		go func() { defer wg.Done(); logErr[0] = pump(outR, outF, "stdout", ps.onLine, nil, onErr) }()
		go func() { defer wg.Done(); logErr[1] = pump(errR, errF, "stderr", ps.onLine, &tail, onErr) }()
	}

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	var timer <-chan time.Time
	if ps.timeout > 0 {
		t := time.NewTimer(ps.timeout)
		defer t.Stop()
		timer = t.C
	}
	for ended := false; !ended; {
		select {
		case <-record:
			ps.onStart(pgid, ProcStart(cmd.Process.Pid))
			record = nil
			continue
		case <-echoTick:
			fe.read(false)
			continue
		case <-done:
			done <- nil
		case <-timer:
			o.timedOut = true
			stopGracefully(ex, grp, ps.grace, done, ctrl.kill)
		case <-ctrl.stop:
			select {
			case <-ctrl.kill:
				ex.kill(grp)
			default:
				stopGracefully(ex, grp, ps.grace, done, ctrl.kill)
			}
		}
		ended = true
	}
	<-done
	// The leader is gone; no process of the step may outlive it.
	_ = grp.signal(true)
	rusage(cmd.ProcessState, &o.use)

	if direct {
		if fe != nil {
			fe.read(true)
		}
		o.stderrTail = FileTail(errF, tailSize)
	} else {
		// Output pipes close when the last writer dies. A process that left
		// the group (setsid) could hold them open: do not wait for it forever.
		waitCh := make(chan struct{})
		go func() { wg.Wait(); close(waitCh) }()
		select {
		case <-waitCh:
		case <-time.After(2 * time.Second):
			_ = outR.SetReadDeadline(time.Now())
			_ = errR.SetReadDeadline(time.Now())
			<-waitCh
		}
		outR.Close()
		errR.Close()
		o.stderrTail = tail.Bytes()
		o.logErr = cmp.Or(logErr[0], logErr[1])
	}

	o.exitCode, o.signal = exitStatus(cmd.ProcessState)
	if o.timedOut {
		o.exitCode, o.signal = 124, 0
	}
	if r := ctrl.Reason(); r != "" && !o.timedOut {
		o.stoppedBy = r
	}
	o.execReason = ex.finish(ps.argv, &o, ctrl.kill)
	if ps.resultPath != "" {
		o.resultStatus, o.resultMessage, o.spent, o.spentBad = readResult(ps.resultPath)
	}
	readAgentSpent(ps, &o)
	return o
}

// startProcess starts ps's process through its executor, writing to outW
// and errW. It returns the program it started (or tried to start last).
func startProcess(ps procSpec, ex processExecutor, outW, errW *os.File) (*osexec.Cmd, string, error) {
	newCmd := func(argv []string) *osexec.Cmd {
		cmd := osexec.Command(argv[0], argv[1:]...)
		cmd.Dir = ps.dir
		cmd.Env = ps.env
		if ps.stdin != nil {
			cmd.Stdin = bytes.NewReader(ps.stdin)
		} else if null := devNull(); null != nil {
			cmd.Stdin = null
		}
		cmd.Stdout = outW
		cmd.Stderr = errW
		setGroup(cmd)
		return cmd
	}
	start := func(argv []string) (*osexec.Cmd, error) {
		cmd := ex.command(argv, newCmd)
		return cmd, atFileLimit(cmd.Start(), devNull(), outW, errW)
	}
	prog := ps.argv[0]
	cmd, err := start(ps.argv)
	if err != nil {
		if derr := workDirProblem(ps.dir); derr != nil {
			// Go reports a working directory that is not there as the
			// program not found: name the directory instead.
			return nil, prog, derr
		}
		if ps.shellArgv != nil {
			// The script's program, started without a shell, could not
			// start (not there, not executable, no #! line): nothing ran,
			// so the shell gets the script and does what it always did
			// with it (runs a file without #! as a shell script, or says
			// why not in its own words, 127 or 126).
			prog = ps.shellArgv[0]
			cmd, err = start(ps.shellArgv)
		}
	}
	return cmd, prog, err
}

// cannotStart records that the process could not start because of err.
func (o *outcome) cannotStart(err error) {
	o.startErr, o.exitCode = err, 127
	if errors.Is(err, osexec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		o.exitCode = 127
	} else if errors.Is(err, os.ErrPermission) {
		o.exitCode = 126
	}
	if Scarce(err) {
		// Out of file descriptors, processes or memory: faber's
		// limits, not the step's doing (README, "Scarce resources").
		o.sysErr = err
	}
}

// stopGracefully asks the attempt to end (ex.terminate) and ends it hard
// after grace (10s when 0), or at once when kill closes, unless the leader
// ends first: then its result goes back to done.
func stopGracefully(ex processExecutor, grp procGroup, grace time.Duration, done chan error, kill <-chan struct{}) {
	if grace <= 0 {
		grace = 10 * time.Second
	}
	ex.terminate(grp)
	g := time.NewTimer(grace)
	defer g.Stop()
	select {
	case err := <-done:
		done <- err
	case <-g.C:
		ex.kill(grp)
	case <-kill:
		ex.kill(grp)
	}
}

// maxResult bounds the result file faber reads: a status and a one-line
// message need a few bytes, and a step must not make faber read gigabytes
// (or /dev/zero, or wait on a FIFO) after it ends.
const maxResult = 1 << 20

// readResult reads {"status": ..., "message": ...} from a result file, and
// what its process spent (cost_usd, turns, tokens: parseSpent), and
// makes the file private (0600) like every file of the run: the step wrote
// it with its own umask. Only a regular file of at most maxResult bytes is
// read (opened without blocking: a FIFO would block faber forever, a
// device never end); anything else, or what is not such JSON, counts as no
// result file: the exit code decides.
func readResult(path string) (status, message string, sp Spent, spentBad string) {
	f, fi, err := regfile.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	if fi.Mode().Perm()&0o077 != 0 {
		privateResult(f, fi, path)
	}
	if fi.Size() > maxResult {
		return
	}
	b, err := io.ReadAll(io.LimitReader(f, maxResult+1))
	if err != nil || len(b) > maxResult {
		return
	}
	status, message = parseResult(b)
	sp, spentBad = parseSpent(b)
	return
}

// parseResult is readResult on the file's bytes. Invalid UTF-8 in the
// message becomes U+FFFD (encoding/json's rule).
func parseResult(b []byte) (status, message string) {
	if len(b) > maxResult || len(bytes.TrimSpace(b)) == 0 {
		return "", ""
	}
	var r struct {
		Status  string `json:"status"`
		Message string `json:"message"`
	}
	if json.Unmarshal(b, &r) != nil {
		return "", ""
	}
	if r.Status != "success" && r.Status != "failure" {
		r.Status = ""
	}
	return r.Status, r.Message
}

// pump copies a pipe to its log file, handing complete lines to onLine. It
// returns the first error writing the log, after which it only drains the
// pipe (the log is not whole any more; onErr hears of it at once).
func pump(r io.Reader, w io.Writer, stream string, onLine func(string, []byte), tail *tailBuf, onErr func(error)) (werr error) {
	// Most steps write little: the buffer grows only when reads fill it.
	buf := make([]byte, 2<<10)
	var lines LineSplitter
	emit := func(l []byte) { onLine(stream, l) }
	for {
		n, err := r.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			if werr == nil {
				if _, werr = w.Write(chunk); werr != nil && onErr != nil {
					onErr(werr)
				}
			}
			if tail != nil {
				tail.Write(chunk)
			}
			if onLine != nil {
				lines.Write(chunk, emit)
			}
		}
		if err != nil {
			break
		}
		if n == len(buf) && len(buf) < 32<<10 {
			buf = make([]byte, 32<<10) // onLine got copies; the log has the bytes
		}
	}
	if onLine != nil {
		lines.Flush(emit)
	}
	return werr
}

// FileTail reads the last n bytes of a log file (opened for reading too).
func FileTail(f *os.File, n int64) []byte {
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return nil
	}
	off := max(fi.Size()-n, 0)
	b := make([]byte, fi.Size()-off)
	m, _ := f.ReadAt(b, off)
	return b[:m]
}

// tailBuf keeps the last tailSize bytes written to it.
type tailBuf struct{ b []byte }

func (t *tailBuf) Write(p []byte) {
	t.b = append(t.b, p...)
	if len(t.b) > 2*tailSize {
		t.b = append(t.b[:0:0], t.b[len(t.b)-tailSize:]...)
	}
}

func (t *tailBuf) Bytes() []byte {
	if len(t.b) > tailSize {
		return t.b[len(t.b)-tailSize:]
	}
	return t.b
}

func sleepMs(n int) { time.Sleep(time.Duration(n) * time.Millisecond) }

func isRegular(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode().IsRegular()
}
