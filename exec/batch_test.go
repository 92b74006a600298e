package exec

import (
	"reflect"
	"sync"
	"testing"
	"time"
)

// fakeScheduler is a batch scheduler's view that a test changes: the
// jobs its list call shows, the records of jobs that left it.
type fakeScheduler struct {
	mu      sync.Mutex
	jobs    map[string]jobState
	records map[string]jobState
	lists   int
}

func (f *fakeScheduler) list() (map[string]jobState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	out := map[string]jobState{}
	for k, v := range f.jobs {
		out[k] = v
	}
	return out, nil
}

func (f *fakeScheduler) record(ids []string) map[string]jobState {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]jobState{}
	for _, id := range ids {
		if r, ok := f.records[id]; ok {
			out[id] = r
		}
	}
	return out
}

func (f *fakeScheduler) set(id string, js jobState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.jobs[id] = js
}

func (f *fakeScheduler) drop(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.jobs, id)
}

func wantEnd(t *testing.T, ch <-chan jobState) jobState {
	t.Helper()
	select {
	case js := <-ch:
		return js
	case <-time.After(20 * time.Second):
		t.Fatal("the job's end never came")
	}
	return jobState{}
}

// TestJobPollerOneCallPerTick: the poller watches many jobs with one list
// call per tick, hands each its final state, and stops when none is left.
func TestJobPollerOneCallPerTick(t *testing.T) {
	f := &fakeScheduler{jobs: map[string]jobState{}}
	p := newJobPoller(f.list, f.record)
	var chans []<-chan jobState
	for i := range 50 {
		id := string(rune('a'+i%26)) + string(rune('a'+i/26))
		f.set(id, jobState{state: "RUNNING", node: "n1"})
		chans = append(chans, p.watch(id))
	}
	time.Sleep(3 * pollMin)
	f.mu.Lock()
	for id := range f.jobs {
		f.jobs[id] = jobState{state: "COMPLETED", done: true, exitCode: 3, node: "n1"}
	}
	f.mu.Unlock()
	for _, ch := range chans {
		if js := wantEnd(t, ch); js.exitCode != 3 || !js.done || js.vanished {
			t.Fatalf("end %+v", js)
		}
	}
	calls := p.calls.Load()
	if calls > 20 {
		t.Errorf("%d status calls for 50 jobs: not one per tick", calls)
	}
	for deadline := time.Now().Add(2 * pollMax); ; time.Sleep(pollMin) {
		p.mu.Lock()
		running := p.running
		p.mu.Unlock()
		if !running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the poller still runs with no job to watch")
		}
	}
}

// TestJobPollerRecord: a job that left the list is found in the engine's
// record; one that is nowhere (and no record kept) vanished.
func TestJobPollerRecord(t *testing.T) {
	f := &fakeScheduler{jobs: map[string]jobState{"1": {state: "RUNNING"}}, records: map[string]jobState{}}
	p := newJobPoller(f.list, f.record)
	ch := p.watch("1")
	time.Sleep(2 * pollMin)
	f.drop("1")
	f.mu.Lock()
	f.records["1"] = jobState{state: "FAILED", done: true, exitCode: 7}
	f.mu.Unlock()
	if js := wantEnd(t, ch); js.exitCode != 7 || js.vanished {
		t.Fatalf("end %+v, want exit 7 from the record", js)
	}

	g := &fakeScheduler{jobs: map[string]jobState{"2": {state: "RUNNING", node: "vm"}}}
	q := newJobPoller(g.list, nil)
	ch = q.watch("2")
	time.Sleep(2 * pollMin)
	g.drop("2")
	if js := wantEnd(t, ch); !js.vanished || js.node != "vm" {
		t.Fatalf("end %+v, want vanished", js)
	}
}

// TestJobPollerBacksOff: while nothing changes, the ticks grow apart.
func TestJobPollerBacksOff(t *testing.T) {
	f := &fakeScheduler{jobs: map[string]jobState{"1": {state: "RUNNING"}}}
	p := newJobPoller(f.list, f.record)
	ch := p.watch("1")
	time.Sleep(4 * time.Second)
	f.set("1", jobState{state: "COMPLETED", done: true})
	wantEnd(t, ch)
	// 4 s at one call per pollMin would be 20 calls; backing off
	// (0.2, 0.4, 0.8, 1.6, 3.2 s) makes it about 5.
	if n := p.calls.Load(); n > 10 {
		t.Errorf("%d calls in 4 s of no change: no back-off", n)
	}
}

func TestParseSqueueJobs(t *testing.T) {
	got := parseSqueueJobs("56|FAILED|1792|vm|56\n55|RUNNING|0|vm\n57|PENDING|0|\n58|CANCELLED|15|vm\n59|TIMEOUT|0|(null)\n60_1|RUNNING|0|vm|62\nnoise\n")
	want := map[string]jobState{
		"56":   {state: "FAILED", done: true, exitCode: 7, node: "vm", raw: "56"},
		"60_1": {state: "RUNNING", node: "vm", raw: "62"},
		"55":   {state: "RUNNING", node: "vm"},
		"57":   {state: "PENDING"},
		"58":   {state: "CANCELLED", done: true, exitCode: 143, signal: 15, node: "vm"},
		"59":   {state: "TIMEOUT", done: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

func TestParseSacctJobs(t *testing.T) {
	got := parseSacctJobs("12|CANCELLED by 0|0:15|vm\n12.batch|CANCELLED|0:15|vm\n13|COMPLETED|3:0|vm\n14|PENDING|0:0|None assigned\n")
	want := map[string]jobState{
		"12": {state: "CANCELLED", done: true, exitCode: 143, signal: 15, node: "vm"},
		"13": {state: "COMPLETED", done: true, exitCode: 3, node: "vm"},
		"14": {state: "PENDING"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}
