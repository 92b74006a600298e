// Package control is the channel between a run's owner and other faber
// processes: the owner listens on a loopback port named in its run directory;
// faber classify and faber stop send it requests there (SPEC §10: only the
// owner opens the run's store).
package control

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/faber-run/faber/exec"
)

// The owner of a run listens on a loopback TCP port so that other processes
// can send it requests (faber classify) while it runs: Badger lets only the
// owner open the store (SPEC §10). The address and a random token are in
// <run-dir>/control.json, readable only by whoever can read the state dir.
const fileName = "control.json"

type info struct {
	Addr  string `json:"addr"`
	Token string `json:"token"`
	PID   int    `json:"pid"`
}

// Msg is a request to a run's owner: Op "classify" (Step, Action, Reason),
// "stop" (Hard) or "usage" (what the run uses of its capacity, and which
// steps wait for resources: faber status).
type Msg struct {
	Token  string `json:"token"`
	Op     string `json:"op"`
	Step   string `json:"step"`
	Action string `json:"action"`
	Reason string `json:"reason"`
	// MemoryBytes and TimeoutMs are a retry's limits (classify --memory,
	// --timeout).
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	TimeoutMs   int64 `json:"timeout_ms,omitempty"`
	Hard        bool  `json:"hard,omitempty"` // stop: terminate at once
	// Op "approve": Action approve or reject, Reason the note or reason,
	// Phase the step names a phase's gate, By who decides (cli, view, mcp).
	Phase bool   `json:"phase,omitempty"`
	By    string `json:"by,omitempty"`
}

// Reply is the owner's answer. Usage marks a request the owner refused as a
// usage error (classify of a step that is not pending_failed); Ending, an
// owner that is ending and will not apply it.
type Reply struct {
	OK     bool   `json:"ok"`
	Error  string `json:"error,omitempty"`
	Usage  bool   `json:"usage,omitempty"`
	Ending bool   `json:"ending,omitempty"`
	// Resources answers "usage".
	Resources *exec.Usage `json:"resources,omitempty"`
}

// usageWait bounds how long a "usage" request waits, at each end, for the
// owner's scheduler: faber status never blocks on a busy owner.
const usageWait = 2 * time.Second

// Server serves a running session; Stop closes it and removes its file.
type Server struct {
	ln   net.Listener
	path string
	reqs chan exec.ControlReq
	done chan struct{}
	// interrupt does what Ctrl-C in the owner does (faber stop).
	interrupt func(hard bool)
}

// Start listens for requests to the session that owns runDir's run;
// interrupt does what Ctrl-C in the owner does (faber stop).
func Start(runDir string, interrupt func(hard bool)) (*Server, error) {
	// Plain TCP: Go listens with MPTCP by default, which costs a run a
	// kernel probe at start and brings nothing on loopback.
	var lc net.ListenConfig
	lc.SetMultipathTCP(false)
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		ln.Close()
		return nil, err
	}
	info := info{Addr: ln.Addr().String(), Token: hex.EncodeToString(tok), PID: os.Getpid()}
	b, _ := json.Marshal(info)
	path := filepath.Join(runDir, fileName)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		ln.Close()
		return nil, err
	}
	s := &Server{ln: ln, path: path, reqs: make(chan exec.ControlReq), done: make(chan struct{}), interrupt: interrupt}
	go s.serve(info.Token)
	return s, nil
}

func (s *Server) serve(token string) {
	var wait time.Duration
	for {
		c, err := s.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			// Out of file descriptors, most often (the run's steps hold
			// them): the channel must outlive that, or faber stop and
			// classify could not reach the run any more. Wait, as
			// net/http does, and accept again.
			wait = min(max(2*wait, 5*time.Millisecond), time.Second)
			select {
			case <-s.done:
				return
			case <-time.After(wait):
			}
			continue
		}
		wait = 0
		go func() {
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(30 * time.Second))
			var m Msg
			if err := json.NewDecoder(bufio.NewReader(c)).Decode(&m); err != nil {
				return
			}
			var rep Reply
			switch {
			case m.Token != token:
				rep.Error = "bad token"
			case m.Op == "stop":
				s.interrupt(m.Hard)
				rep.OK = true
			case m.Op == "usage":
				ch := make(chan *exec.Usage, 1)
				t := time.NewTimer(usageWait)
				select {
				case s.reqs <- exec.ControlReq{Usage: ch}:
					rep.Resources = <-ch
					rep.OK = true
				case <-s.done:
					rep.Ending = true
					rep.Error = "the run is ending"
				case <-t.C:
					rep.Error = "the run's owner is busy"
				}
				t.Stop()
			case m.Op != "classify" && m.Op != "approve":
				rep.Error = "unknown request " + m.Op
			default:
				req := exec.ControlReq{StepID: m.Step, Action: m.Action, Reason: m.Reason,
					Limits: exec.Limits{MemoryBytes: m.MemoryBytes, TimeoutMs: m.TimeoutMs}, Reply: make(chan error, 1)}
				if m.Op == "approve" {
					req.Gate = &exec.GateReq{Step: m.Step, Phase: m.Phase, Approve: m.Action == "approve", Text: m.Reason, By: m.By}
				}
				select {
				case s.reqs <- req:
					err := <-req.Reply
					rep.OK = err == nil
					if err != nil {
						rep.Error = err.Error()
						var ce *exec.ClassifyError
						var ge *exec.GateError
						rep.Usage = errors.As(err, &ce) || errors.As(err, &ge)
					}
				case <-s.done:
					rep.Ending = true
					rep.Error = "the run is ending"
				}
			}
			_ = json.NewEncoder(c).Encode(rep)
		}()
	}
}

// Requests are the classify requests, for the runner (exec.Runner.Control).
func (s *Server) Requests() <-chan exec.ControlReq { return s.reqs }

// Stop closes the channel: requests that arrive later are told the run is
// ending.
func (s *Server) Stop() {
	close(s.done)
	s.ln.Close()
	os.Remove(s.path)
}

// Files are the files a session's control channel keeps in its run
// directory, which a dead owner leaves behind (Forget, state.CleanDeadRuns).
var Files = []string{fileName, fileName + ".tmp"}

// Forget removes what a dead owner's control channel left in runDir; only
// the run's owner (which holds its lock) may call it.
func Forget(runDir string) {
	for _, n := range Files {
		_ = os.Remove(filepath.Join(runDir, n))
	}
}

// Usage asks a run's owner what the run uses of its capacity and which
// steps wait for resources; nil when no owner answers in a short while (a
// dead or finished run, an owner too busy to say).
func Usage(runDir string) *exec.Usage {
	rep, ok, err := send(runDir, Msg{Op: "usage"}, usageWait+time.Second)
	if !ok || err != nil || !rep.OK {
		return nil
	}
	return rep.Resources
}

// Send sends a run's owner a request (classify a step, stop). ok=false means no owner
// answered (the caller then opens the store itself).
func Send(runDir string, m Msg) (rep Reply, ok bool, err error) {
	return send(runDir, m, 30*time.Second)
}

// send is Send, waiting at most wait for the answer.
func send(runDir string, m Msg, wait time.Duration) (rep Reply, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(runDir, fileName))
	if err != nil {
		return rep, false, nil
	}
	var info info
	if json.Unmarshal(b, &info) != nil || !strings.HasPrefix(info.Addr, "127.0.0.1:") {
		return rep, false, nil
	}
	c, err := net.DialTimeout("tcp", info.Addr, min(wait, 2*time.Second))
	if err != nil {
		return rep, false, nil
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(wait))
	m.Token = info.Token
	if err := json.NewEncoder(c).Encode(m); err != nil {
		return rep, false, nil
	}
	if err := json.NewDecoder(c).Decode(&rep); err != nil {
		return rep, false, fmt.Errorf("the run's owner (pid %d) did not answer: %w", info.PID, err)
	}
	if rep.Ending {
		return rep, false, nil
	}
	return rep, true, nil
}
