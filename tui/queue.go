// Package tui renders a run's events for a person or a program: the bubbletea
// terminal UI, plain lines, and JSON lines. It consumes events; it never
// starts a process or opens the store.
package tui

import (
	"sync"

	"github.com/faber-run/faber/exec"
)

// maxQueuedLines bounds how many output lines wait for a slow terminal; past
// it output lines are dropped (transitions never are).
const maxQueuedLines = 10000

// maxSpare is the most events (224 bytes each) of a written batch's array
// that the writer keeps for the next batch.
const maxSpare = 1024

// queue decouples the runner from a slow writer: Event never blocks.
type queue struct {
	mu      sync.Mutex
	items   []exec.Event
	lines   int
	dropped int
	wake    chan struct{}
	closed  bool
	done    chan struct{}
}

// newQueue starts the writer: consume gets each event in order, dropped the
// count of output lines dropped, and flush (if set) runs after each batch, so
// a writer can flush once per batch instead of once per event.
func newQueue(consume func(exec.Event), dropped func(n int), flush func()) *queue {
	q := &queue{wake: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(q.done)
		// The batch just written is the next one's array: a new array for
		// each batch, grown by append, was a tenth of what a 10,000-item
		// cached fan-out allocated besides the store. It is cleared
		// first, so that it holds no event once written, and kept only
		// up to maxSpare events: the big batch of a writer that fell
		// behind is not held for the rest of the run.
		var spare []exec.Event
		for {
			q.mu.Lock()
			items, n, closed := q.items, q.dropped, q.closed
			q.items, q.lines, q.dropped = spare[:0], 0, 0
			q.mu.Unlock()
			if n > 0 && dropped != nil {
				dropped(n)
			}
			for _, e := range items {
				consume(e)
			}
			clear(items)
			if spare = nil; cap(items) <= maxSpare {
				spare = items
			}
			if flush != nil && (len(items) > 0 || n > 0) {
				flush()
			}
			if closed && len(items) == 0 {
				return
			}
			if len(items) == 0 {
				<-q.wake
			}
		}
	}()
	return q
}

func (q *queue) put(e exec.Event) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	if e.Type == exec.EvStepOutput {
		if q.lines >= maxQueuedLines {
			q.dropped++
			q.mu.Unlock()
			return
		}
		q.lines++
	}
	q.items = append(q.items, e)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// close flushes what is queued and stops the writer.
func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	<-q.done
}
