package exec

import (
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
	many   func(tasks []*arrayTask[T]) ([]string, error)

	mu      sync.Mutex
	pending map[string][]*arrayTask[T]
	// submissions counts the submissions made (bench/ reports them).
	submissions int
}

func newArrayBatcher[T any](one func(T, procSpec) (string, error), many func([]*arrayTask[T]) ([]string, error)) *arrayBatcher[T] {
	return &arrayBatcher[T]{window: arrayWindow, one: one, many: many, pending: map[string][]*arrayTask[T]{}}
}

// submit queues the item's attempt under key and returns its job's (or
// array task's) id once the batch it joined was submitted.
func (b *arrayBatcher[T]) submit(key string, item T, ps procSpec) (string, error) {
	t := &arrayTask[T]{item: item, ps: ps, done: make(chan arrayResult, 1)}
	b.mu.Lock()
	first := len(b.pending[key]) == 0
	b.pending[key] = append(b.pending[key], t)
	b.mu.Unlock()
	if first {
		time.AfterFunc(b.window, func() { b.flush(key) })
	}
	r := <-t.done
	return r.id, r.err
}

func (b *arrayBatcher[T]) flush(key string) {
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
	ids, err := b.many(tasks)
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
