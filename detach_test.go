package main

import (
	"bytes"
	"os"
	"sync"
	"testing"
)

// syncBuffer is a bytes.Buffer safe for the relay's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRelayHandshake: what the owner says before its handshake line is
// written at once, in order; the handshake goes to hello, not to the
// terminal; what follows is held until release; an owner that ends
// without a handshake gives "".
func TestRelayHandshake(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	rel := &relay{w: out, hello: make(chan string, 1), done: make(chan struct{})}
	go rel.copy(r)
	w.WriteString("faber: warning: one\n")
	w.WriteString(handshakeMark + "plan-20261128T000000-abcd 1\n")
	if got := <-rel.hello; got != "plan-20261128T000000-abcd 1\n" {
		t.Errorf("hello = %q", got)
	}
	if got := out.String(); got != "faber: warning: one\n" {
		t.Errorf("before the handshake the terminal got %q", got)
	}
	w.WriteString("faber: cannot write: disk full\n")
	w.Close()
	<-rel.done
	if got := out.String(); got != "faber: warning: one\n" {
		t.Errorf("while the view is up the terminal got %q", got)
	}
	rel.finish()
	if got := out.String(); got != "faber: warning: one\nfaber: cannot write: disk full\n" {
		t.Errorf("after release the terminal has %q", got)
	}

	r, w, err = os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	out = &syncBuffer{}
	rel = &relay{w: out, hello: make(chan string, 1), done: make(chan struct{})}
	go rel.copy(r)
	w.WriteString("faber: plan.yaml:3:5: bad\n")
	w.Close()
	if got := <-rel.hello; got != "" {
		t.Errorf("hello of an owner that ended early = %q, want \"\"", got)
	}
	rel.finish()
	if got := out.String(); got != "faber: plan.yaml:3:5: bad\n" {
		t.Errorf("the terminal got %q", got)
	}
}

// TestRelayWriterDropsAGoneForeground: the owner's writes go on to
// owner.log once the foreground's pipe is broken, and never fail.
func TestRelayWriterDropsAGoneForeground(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	rw := &relayWriter{relay: w}
	rw.setLog(&log)
	r.Close()
	w.Close()
	for _, s := range []string{"a\n", "b\n"} {
		if n, err := rw.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if log.String() != "a\nb\n" || rw.relay != nil {
		t.Errorf("log %q, relay %v", log.String(), rw.relay)
	}
}
