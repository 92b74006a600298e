package control

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/faber-run/faber/exec"
)

// TestRequests: a stop reaches the owner's interrupt; a classify reaches the
// runner and its answer comes back; after Stop, a sender is told nobody
// answers (it then opens the store itself).
func TestRequests(t *testing.T) {
	dir := t.TempDir()
	hard := make(chan bool, 1)
	s, err := Start(dir, func(h bool) { hard <- h })
	if err != nil {
		t.Fatal(err)
	}
	if rep, ok, err := Send(dir, Msg{Op: "stop", Hard: true}); err != nil || !ok || !rep.OK {
		t.Fatalf("stop: %+v %v %v", rep, ok, err)
	}
	if h := <-hard; !h {
		t.Error("stop --hard arrived as a graceful stop")
	}
	go func() {
		req := <-s.Requests()
		if req.StepID != "build" || req.Action != "retry" || req.Reason != "flaky" {
			req.Reply <- errors.New("wrong request")
			return
		}
		req.Reply <- &exec.ClassifyError{}
	}()
	rep, ok, err := Send(dir, Msg{Op: "classify", Step: "build", Action: "retry", Reason: "flaky"})
	if err != nil || !ok || rep.OK || !rep.Usage {
		t.Errorf("classify: %+v %v %v; want the runner's usage error back", rep, ok, err)
	}
	if rep, _, _ := Send(dir, Msg{Op: "reboot"}); rep.OK {
		t.Error("an unknown request was accepted")
	}
	s.Stop()
	if _, ok, err := Send(dir, Msg{Op: "stop"}); ok || err != nil {
		t.Errorf("after Stop: ok %v, err %v; want no owner", ok, err)
	}
}

// flakyListener fails its first Accept with EMFILE, as a run whose steps
// hold every file descriptor would.
type flakyListener struct {
	net.Listener
	failed bool
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if !l.failed {
		l.failed = true
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// TestAcceptOutOfFiles: an Accept that fails for want of file descriptors
// does not end the channel; a stop sent later still reaches the owner.
func TestAcceptOutOfFiles(t *testing.T) {
	dir := t.TempDir()
	hard := make(chan bool, 1)
	s, err := Start(dir, func(h bool) { hard <- h })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	// Swap in the flaky listener before any request: serve is waiting in
	// the real Accept, so give it one connection to come round.
	fl := &flakyListener{Listener: s.ln}
	s2 := &Server{ln: fl, path: s.path, reqs: s.reqs, done: s.done, interrupt: s.interrupt}
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fl.Listener = ln2
	go s2.serve(readToken(t, dir))
	defer ln2.Close()
	writeAddr(t, dir, ln2.Addr().String())
	if rep, ok, err := Send(dir, Msg{Op: "stop"}); err != nil || !ok || !rep.OK {
		t.Fatalf("stop after a failed accept: %+v %v %v", rep, ok, err)
	}
	if h := <-hard; h {
		t.Error("a graceful stop arrived as a hard one")
	}
}

func readToken(t *testing.T, dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, fileName))
	if err != nil {
		t.Fatal(err)
	}
	var i info
	if err := json.Unmarshal(b, &i); err != nil {
		t.Fatal(err)
	}
	return i.Token
}

func writeAddr(t *testing.T, dir, addr string) {
	b, _ := os.ReadFile(filepath.Join(dir, fileName))
	var i info
	_ = json.Unmarshal(b, &i)
	i.Addr = addr
	b, _ = json.Marshal(i)
	if err := os.WriteFile(filepath.Join(dir, fileName), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestUsage: a "usage" request reaches the runner and its answer comes
// back; an owner that does not answer in usageWait, or none, gives nil.
func TestUsage(t *testing.T) {
	dir := t.TempDir()
	if u := Usage(dir); u != nil {
		t.Fatalf("no owner: %+v", u)
	}
	s, err := Start(dir, func(bool) {})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	go func() {
		req := <-s.Requests()
		if req.Usage == nil {
			req.Reply <- errors.New("not a usage request")
			return
		}
		req.Usage <- &exec.Usage{Capacity: exec.Amounts{CPUs: 2}, InUse: exec.Amounts{CPUs: 1},
			Waiting: []exec.WaitingStep{{Step: "big", Reason: "waiting: 2 CPUs, 1 free"}}}
	}()
	u := Usage(dir)
	if u == nil || u.Capacity.CPUs != 2 || u.InUse.CPUs != 1 || len(u.Waiting) != 1 || u.Waiting[0].Reason != "waiting: 2 CPUs, 1 free" {
		t.Fatalf("usage: %+v", u)
	}
	// Nobody reads the requests now: the owner is busy.
	if u := Usage(dir); u != nil {
		t.Errorf("busy owner: %+v, want nil", u)
	}
}
