package exec

import (
	"strconv"
	"strings"
	"sync"
	"time"
)

// Fan-outs as job arrays, for every batch engine: the attempts of a
// fan-out's items that faber starts together (one scheduling pass: every
// ready item that its jobs and max_parallel let start) are gathered for
// arrayWindow and submitted as one array job by the engine (Slurm's
// sbatch --array, slurm_array.go; Grid Engine's qsub -t, sge_array.go).
// Items are gathered by a key the engine chooses (the fan-out and the
// limits its submission carries), so that an item whose limits differ (a
// retry whose memory grew) is an array, or a job, of its own. A batch of
// one item is a plain job.

// Under max_parallel the engine holds the throttle (README "Fan-outs as
// job arrays"): the items of a fan-out that one scheduling pass starts
// while none of its items is in flight form a pass (arrayPass), which may
// start more than max_parallel of them; they are one array submitted
// with the engine's throttle (sbatch --array=…%M, qsub -tc M), once every
// one of them has reached its submission or ended before it. Items
// started later start only while fewer than max_parallel are in flight
// (holdItem), as before, so never more than max_parallel run.

// arrayWindow is how long the first item of a batch waits for the others
// that the same scheduling pass starts.
const arrayWindow = 100 * time.Millisecond

// arrayTask is one item's attempt (its executor, of type T) waiting to be
// submitted.
type arrayTask[T any] struct {
	item T
	ps   procSpec
	done chan arrayResult
}

// arrayPass is the items of a fan-out under max_parallel that one
// scheduling pass started together while none of its items was in flight
// (Runner.passJoin), with the same array key: they are one array whose
// throttle is the engine's.
type arrayPass struct {
	id  int
	key string // the array key (arrayKind) of its items
	max int    // the fan-out's max_parallel
	// outside counts the fan-out's items the pass started that are not
	// in it (another key): they run beside its array, so its throttle
	// is max less them. Only the scheduler touches it, before close.
	outside int
	closed  bool // the pass that opened it ended: no more items join
	wg      sync.WaitGroup

	mu      sync.Mutex
	flushes []func()
}

// throttle is how many tasks of the pass's array may run at once.
func (p *arrayPass) throttle() int { return p.max - p.outside }

// whenComplete runs f once every item of the pass arrived (after close).
func (p *arrayPass) whenComplete(f func()) {
	p.mu.Lock()
	p.flushes = append(p.flushes, f)
	p.mu.Unlock()
}

// close says no more items join; the arrays are submitted once the items
// that joined have arrived.
func (p *arrayPass) close() {
	p.closed = true
	go func() {
		p.wg.Wait()
		p.mu.Lock()
		fs := p.flushes
		p.flushes = nil
		p.mu.Unlock()
		for _, f := range fs {
			f()
		}
	}()
}

// passMember is one item's place in a pass: it arrives once, when its
// attempt is queued for submission or ends before that.
type passMember struct {
	pass *arrayPass
	once sync.Once
}

func (m *passMember) arrive() {
	if m != nil {
		m.once.Do(m.pass.wg.Done)
	}
}

type arrayResult struct {
	id  string
	err error
}

// arrayBatcher gathers the items to submit as arrays, by key: one submits
// a batch of one item as a job, many a batch of several as an array (the
// ids of its tasks, in order).
type arrayBatcher[T any] struct {
	window time.Duration // arrayWindow; tests wait longer
	one    func(item T, ps procSpec) (string, error)
	// many submits tasks as one array, at most throttle of whose tasks
	// run at once (0: no throttle of the engine's).
	many func(tasks []*arrayTask[T], throttle int) ([]string, error)

	mu      sync.Mutex
	pending map[string][]*arrayTask[T]
	// submissions counts the submissions made (bench/ reports them).
	submissions int
}

func newArrayBatcher[T any](one func(T, procSpec) (string, error), many func([]*arrayTask[T], int) ([]string, error)) *arrayBatcher[T] {
	return &arrayBatcher[T]{window: arrayWindow, one: one, many: many, pending: map[string][]*arrayTask[T]{}}
}

// submit queues the item's attempt under key and returns its job's (or
// array task's) id once the batch it joined was submitted: a pass's
// items once all of them arrived, others after arrayWindow.
func (b *arrayBatcher[T]) submit(key string, item T, ps procSpec) (string, error) {
	t := &arrayTask[T]{item: item, ps: ps, done: make(chan arrayResult, 1)}
	m := ps.pass
	if m != nil {
		key += "\x00pass " + strconv.Itoa(m.pass.id)
	}
	b.mu.Lock()
	first := len(b.pending[key]) == 0
	b.pending[key] = append(b.pending[key], t)
	b.mu.Unlock()
	switch {
	case first && m != nil:
		p := m.pass
		p.whenComplete(func() { b.flush(key, p.throttle()) })
	case first:
		time.AfterFunc(b.window, func() { b.flush(key, 0) }) // no throttle
	}
	// Queued: the pass's array goes once the others are (arrive after
	// whenComplete, so that the pass's flush is registered by then).
	m.arrive()
	r := <-t.done
	return r.id, r.err
}

func (b *arrayBatcher[T]) flush(key string, throttle int) {
	b.mu.Lock()
	tasks := b.pending[key]
	delete(b.pending, key)
	b.submissions++
	b.mu.Unlock()
	if len(tasks) == 1 {
		id, err := b.one(tasks[0].item, tasks[0].ps)
		tasks[0].done <- arrayResult{id, err}
		return
	}
	if throttle >= len(tasks) {
		throttle = 0 // all of them may run
	}
	ids, err := b.many(tasks, throttle)
	for i, t := range tasks {
		if err != nil {
			t.done <- arrayResult{err: err}
		} else {
			t.done <- arrayResult{id: ids[i]}
		}
	}
}

// shQuote quotes s for a POSIX shell: in single quotes, which keep every
// byte as it is (newlines, invalid UTF-8, $, \, ` included), each ' written
// as the four bytes ' \ ' ' (end the quote, an escaped ', quote again).
// mvdan.cc/sh's syntax.Quote refuses a newline or a control byte for POSIX
// shells (it would need bash's $'...'), and a run: script is all newlines.
// Both batch engines' generated scripts use it.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
