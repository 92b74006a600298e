package control

import (
	"errors"
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
