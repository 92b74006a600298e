package main

// faber run (and resume) in a terminal runs the run in a background owner
// process and shows it in the foreground, so that q in the live view gives
// the shell its prompt back while the run goes on (README "The live view").
//
// The foreground starts itself again (os.Executable, the same arguments)
// with ownerEnv set, in a session of its own, stdin /dev/null and stdout
// and stderr a pipe that the foreground relays. That owner is the same
// faber run with another renderer: once the run exists it writes the
// handshake (a line with the run id and whether the session waits for
// decisions in the view) on that pipe, after whatever it said before, then
// its progress and messages to the run's owner.log too. The
// foreground then shows the run as faber attach does (its event log and
// log files) with faber run's keys: Ctrl-C signals the owner, r / x x
// classify over the control channel. When the owner ends, the foreground
// shows the summary and exits with the owner's code; q leaves at once,
// exit 0, and the owner goes on. Where the owner cannot start, the run runs
// in this process as before.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/faber-run/faber/internal/run"
	"github.com/faber-run/faber/state"
	"github.com/faber-run/faber/tui"
)

// ownerEnv marks the background owner: fd 3 is the foreground's pipe: a
// first byte once its view follows the run (readyByte), then a byte or EOF
// once nobody decides in the view any more. It is dropped from the
// environment at once, so that the steps and child runs never see it.
const ownerEnv = "FABER_OWNER_HANDSHAKE"

// handshakeMark starts the owner's handshake line on its stdout/stderr:
// "<mark><run id> <1 if the session waits for decisions, else 0>".
const handshakeMark = "\x00faber-owner-run "

// readyWait bounds how long the owner waits, after the handshake, for the
// foreground's view to follow the run before its first step starts (so that
// the view has every step's output, as it had in-process).
const readyWait = 3 * time.Second

// ownerLogName is the owner's output in the run's directory: its progress
// as plain lines, its warnings and its last error.
const ownerLogName = "owner.log"

// owner is the background process's side of a detached run.
type owner struct {
	back *os.File // fd 3: from the foreground
	// out is the owner's stdout and stderr, one pipe to the foreground
	// (one writer: what it says keeps its order).
	out *relayWriter

	mu  sync.Mutex
	log io.Writer // owner.log once the run exists (nil before)
}

// takeOwner returns the owner's side when this process is a background
// owner (ownerEnv), else nil.
func takeOwner() *owner {
	v, ok := os.LookupEnv(ownerEnv)
	if !ok {
		return nil
	}
	os.Unsetenv(ownerEnv)
	if v != "1" || !detachSupported {
		return nil
	}
	closeOnExec(3)
	return &owner{back: os.NewFile(3, "foreground"), out: &relayWriter{relay: os.Stderr}}
}

// relayWriter is the owner's stdout or stderr: the foreground's pipe while
// it reads it (a write that fails drops it: the foreground left), and
// owner.log once the run exists.
type relayWriter struct {
	mu    sync.Mutex
	relay io.Writer
	log   io.Writer
}

func (w *relayWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.relay != nil {
		if _, err := w.relay.Write(p); err != nil {
			w.relay = nil
		}
	}
	if w.log != nil {
		_, _ = w.log.Write(p)
	}
	return len(p), nil
}

func (w *relayWriter) setLog(l io.Writer) {
	w.mu.Lock()
	w.log = l
	w.mu.Unlock()
}

// logOnly is where the owner writes what the foreground prints itself
// (the end hints): owner.log only.
func (o *owner) logOnly() io.Writer {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.log == nil {
		return io.Discard
	}
	return o.log
}

// show is the owner's Session.Show: progress goes to owner.log, the
// foreground learns the run id, and the session waits for decisions (with
// a control channel) until the foreground gives them up or goes.
func (o *owner) show(g *Globals, runID string, control bool) (run.Display, <-chan struct{}) {
	ctl := "0"
	if control {
		ctl = "1"
	}
	fmt.Fprintf(o.out, "%s%s %s\n", handshakeMark, runID, ctl)
	var w io.Writer = io.Discard
	f, err := os.OpenFile(filepath.Join(state.RunDir(g.StateDir, runID), ownerLogName), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintf(g.stderr, "faber: warning: %s: %v\n", ownerLogName, unwrapPath(err))
	} else {
		w = &lockedWriter{w: f}
		o.mu.Lock()
		o.log = w
		o.mu.Unlock()
		o.out.setLog(w)
	}
	ready, gone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(gone)
		var b [1]byte
		if n, _ := o.back.Read(b[:]); n == 0 {
			close(ready) // the foreground went
			return
		}
		close(ready)
		_, _ = o.back.Read(b[:])
	}()
	select {
	case <-ready:
	case <-time.After(readyWait):
	}
	var decisions <-chan struct{}
	if control {
		decisions = gone
	}
	return tui.NewPlain(w, tui.NewStyles(false), false), decisions
}

// lockedWriter serializes the writes of the owner's renderer and of its
// messages to owner.log.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// detachable reports whether this faber run / resume shows the live view
// (ui as given) and so runs the run in a background owner.
func detachable(g *Globals, ui string) bool {
	if !detachSupported || g.owner != nil || os.Getenv("FABER_NO_DETACH") != "" {
		return false
	}
	switch ui {
	case "tui":
		return onTerminal(g)
	case "", "auto":
		return wantTUI(g)
	}
	return false
}

// runDetached runs this command (os.Args) in a background owner and shows
// its run here. started is false when the owner could not start (a warning
// said why): the caller then runs the run itself.
func runDetached(g *Globals) (started bool, err error) { return runDetachedArgs(g, os.Args[1:]) }

// runDetachedArgs is runDetached with the owner's command line args (what
// follows the program's name) given: attach, resuming a run, has the owner
// run "resume RUN" rather than itself.
func runDetachedArgs(g *Globals, args []string) (started bool, err error) {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(g.stderr, "faber: warning: cannot run in the background (%v); the run runs here, and q keeps the terminal until it ends\n", err)
		return false, nil
	}
	var files []*os.File
	pipe := func() (r, w *os.File) {
		if err != nil {
			return nil, nil
		}
		if r, w, err = os.Pipe(); err == nil {
			files = append(files, r, w)
		}
		return r, w
	}
	backR, backW := pipe()
	outR, outW := pipe()
	cmd := osexec.Command(exe, args...)
	if runtime.GOOS == "linux" {
		if _, err := os.Stat("/proc/self/exe"); err == nil {
			// This very binary, even if faber was upgraded meanwhile: the
			// handshake is between two copies of one version.
			cmd.Path = "/proc/self/exe"
		}
	}
	cmd.Env = append(os.Environ(), ownerEnv+"=1")
	cmd.Stdout, cmd.Stderr = outW, outW
	cmd.ExtraFiles = []*os.File{backR}
	cmd.SysProcAttr = ownerAttr()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		for _, f := range files {
			f.Close()
		}
		fmt.Fprintf(g.stderr, "faber: warning: cannot run in the background (%v); the run runs here, and q keeps the terminal until it ends\n", err)
		return false, nil
	}
	backR.Close()
	outW.Close()
	defer backW.Close()

	rel := &relay{w: g.stderr, hello: make(chan string, 1), done: make(chan struct{})}
	go rel.copy(outR)
	ended := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(ended)
	}()
	// Until the view is up, Ctrl-C is a signal here (the owner, in a
	// session of its own, gets none from the terminal); in the view it is
	// a key (OnInterrupt). SIGTERM stops the run as it would in-process.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	forward := func(s os.Signal) { _ = cmd.Process.Signal(s) }

	var line string
wait:
	for {
		select {
		case s := <-sigs:
			forward(s)
		case line = <-rel.hello:
			break wait
		}
	}
	id, control, ok := strings.Cut(strings.TrimSpace(line), " ")
	if !ok {
		// The owner ended before its run existed (a plan error, a run
		// active elsewhere…): it said why on the relayed stderr.
		<-ended
		rel.finish()
		return true, ownerExit(cmd, "")
	}

	meta, _ := state.ReadMeta(g.StateDir, id)
	plan := run.StoredPlan(g.StateDir, id, meta)
	opt := liveOptions(g, plan, id, control == "1")
	if opt.Plan == "" {
		opt.Plan = meta.Plan // no plan to read: the steps come from the events
	}
	opt.OnInterrupt = func(bool) { forward(os.Interrupt) } // the owner's second SIGINT is its hard stop
	t := tui.NewForeground(g.stdout, g.stdin, opt)
	f := run.NewFollower(g.StateDir, id, t)
	f.SetPlan(plan)
	defer f.Close()
	_ = f.Poll()
	_, _ = backW.Write([]byte{'r'}) // the owner may start its steps
	tick := time.NewTicker(attachPoll)
	defer tick.Stop()
	left, decisions := t.Left(), t.Decisions()
	for {
		select {
		case <-tick.C:
			_ = f.Poll()
			continue
		case s := <-sigs:
			forward(s)
			continue
		case <-decisions:
			// q while the session waits for a decision, or the view ended:
			// the owner stops waiting (the run ends pending_failed).
			_, _ = backW.Write([]byte{'l'})
			decisions = nil
			continue
		case <-left:
			left = nil
			if !t.Detached() {
				continue // plain lines follow, as in-process
			}
			rel.release()
			fmt.Fprintf(g.stdout, "faber: left the live view; run %s goes on in the background (pid %d).\n"+
				"  back to it:  faber attach %s\n"+
				"  stop it:     faber stop %s\n", id, cmd.Process.Pid, id, id)
			return true, nil
		case <-ended:
		}
		break
	}
	// The owner has ended: this poll reads every event its run will have.
	_ = f.Poll()
	_, ferr := f.Finish()
	t.Close()
	rel.finish()
	if ferr != nil {
		fmt.Fprintf(g.stderr, "faber: %v\n", ferr)
	}
	return true, ownerExit(cmd, id, func(code int) {
		if code != exitFailed && code != exitPending && code != exitInterrupted {
			return
		}
		// As runSession does after its own view.
		if !t.Summarized() {
			if v, err := run.View(g.StateDir, id); err == nil {
				for _, h := range tui.EndHints(id, v.Steps) {
					fmt.Fprintln(g.stderr, h)
				}
			}
		}
		fmt.Fprintf(g.stderr, "resume with: faber resume %s\n", id)
	})
}

// ownerExit is the foreground's exit for the owner's: its code (after
// hints, for a run's outcome), or, for an owner killed by a signal, a
// state problem naming how to go on.
func ownerExit(cmd *osexec.Cmd, id string, hints ...func(code int)) error {
	ps := cmd.ProcessState
	code := ps.ExitCode()
	if code < 0 && interruptSignal(ps) {
		// Ctrl-C before the owner had its handlers (reading the plan):
		// as an in-process faber, it ended of it.
		return codeOnly(exitInterrupted)
	}
	if code < 0 {
		if id == "" {
			return withCode(exitState, fmt.Errorf("the run's background faber (pid %d) ended: %v", cmd.Process.Pid, ps))
		}
		return withCode(exitState, fmt.Errorf("run %s: its background faber (pid %d) ended: %v; faber resume %s continues it", id, cmd.Process.Pid, ps, id))
	}
	for _, h := range hints {
		h(code)
	}
	return codeOnly(code)
}

// relay copies the owner's stdout and stderr (one pipe, in lines) to this
// process's stderr: at once until the handshake line, which goes to hello
// (or "" at EOF before it); then held while the live view is up, and
// written once the terminal is back.
type relay struct {
	mu      sync.Mutex
	w       io.Writer
	held    bytes.Buffer
	holding bool
	hello   chan string
	done    chan struct{}
}

func (r *relay) copy(src *os.File) {
	defer close(r.done)
	defer src.Close()
	said := false
	defer func() {
		if !said {
			r.hello <- ""
		}
	}()
	rd := bufio.NewReaderSize(src, 32<<10)
	for {
		line, err := rd.ReadSlice('\n')
		if len(line) > 0 {
			r.mu.Lock()
			switch {
			case !said && bytes.HasPrefix(line, []byte(handshakeMark)):
				said, r.holding = true, true
				r.hello <- strings.TrimPrefix(string(line), handshakeMark)
			case r.holding:
				r.held.Write(line)
			default:
				_, _ = r.w.Write(line)
			}
			r.mu.Unlock()
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}

// release writes what was held and stops holding.
func (r *relay) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.holding = false
	_, _ = r.w.Write(r.held.Bytes())
	r.held.Reset()
}

// finish waits (a little: a process the owner left may hold the pipe) for
// the owner's last words, and writes them.
func (r *relay) finish() {
	select {
	case <-r.done:
	case <-time.After(time.Second):
	}
	r.release()
}
