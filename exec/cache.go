package exec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	osexec "os/exec"
	"reflect"
	"time"
)

// The scheduler's side of caching (README, "Caching"). A ready step that
// declares inputs is probed before its first attempt of the session: its
// key is computed off the scheduler goroutine (hashing may read gigabytes)
// while it holds a job slot, then compared with the state-dir-wide entry of
// its plan and id. A hit is committed as status cached with a
// step_cache_hit event naming the run whose attempt exited 0; a miss is
// committed as step_cache_miss with the reason, then the attempt starts.
//
// The entry of a success is written only after the success is committed
// (the run's store and the cache are not one transaction): it names the
// run, attempt and seq of the committed step_status event, and the key
// itself is part of that committed step record (cache_key). A crash
// between the two loses the entry (the next run misses), never invents
// one.

// stepCache is a step's cache state during the session.
type stepCache struct {
	probed bool
	probe  *CacheProbe // nil: not cacheable this session
	outs   map[string]string
	outErr error
}

// cacheable reports whether a step may be skipped or recorded: it
// declares inputs, is not off, is a process-running step (not a join, not
// the end step) and caching is on for the session.
func (r *Runner) cacheable(sr *stepRun) bool {
	return r.Cache != nil && sr.def.Cache.Enabled() && !sr.def.Join && !sr.isEnd && sr.def.PlanPath == ""
}

// probeCache starts computing the key of a ready step; it reports back
// with mCacheProbed. It returns false when there is nothing to probe.
func (r *Runner) probeCache(sr *stepRun) bool {
	if sr.cache.probed || sr.st.Status != StatusPending || !r.cacheable(sr) {
		return false
	}
	sr.cache.probed = true
	needs := map[string]string{}
	for _, d := range sr.deps {
		if !Status(d.st.Status).Succeeded() {
			// A continued failure upstream: nothing to reuse.
			r.commitMiss(sr, "", fmt.Sprintf("upstream %s is %s", d.def.ID, d.st.Status))
			return false
		}
		needs[d.def.ID] = NeedKey(d.st, r.Plan, d.def)
	}
	for _, u := range sr.def.Uses {
		// The values it substitutes are part of what it is given.
		needs["{"+u.Name()+"}"] = r.useKey(u)
	}
	forced := r.forced(sr)
	read := !r.NoCache && !forced
	p, def, cache := r.Plan, sr.def, r.Cache
	var vars map[string]string
	var env []string
	if len(def.Cache.KeyCmds) > 0 {
		// A cache_key command is an action that follows the upstream
		// steps' successes: what commitLater holds is stored first.
		if r.flushLater(); r.fatal != nil {
			return true // it stays pending
		}
		vars = r.vars(sr, sr.st.Attempt+1, nil)
		env = r.env(sr, sr.st.Attempt+1, vars, "", nil, nil)
	}
	r.takeSlot(sr)
	r.work(sr)
	// The probe's blocking work (reading the entry, cache_key commands,
	// hashing) takes the session's stop context: an interrupt, a halt or
	// a failed commit ends it within one read of a file or the kill of a
	// cache_key process group, and the step stays pending (cacheProbed).
	ctx := r.workCtx()
	r.probes.run(func() {
		var entry *CacheEntry
		var readErr error
		if read {
			entry, readErr = cache.Get(p.Name, def.ID)
		}
		keyOut, err := KeyCommandsDigest(def.Cache.KeyCmds, func(cmd string) ([]byte, error) {
			argv, extra, err := ScriptArgv(p, def, cmd, vars)
			if err != nil {
				return nil, err
			}
			return runKeyCmd(ctx, argv, WorkDir(p, def, vars), append(append([]string{}, env...), extra...))
		})
		var pr *CacheProbe
		if err == nil {
			pr, err = ProbeCache(ctx, p, def, needs, keyOut)
		}
		why := ""
		switch {
		case err != nil:
			why = "cannot compute the key: " + err.Error()
		case forced:
			why = "forced (--force)"
		case r.NoCache:
			why = "cache not read (--no-cache)"
		case readErr != nil:
			why = "cache entry unreadable"
		default:
			why = KeyMiss(entry, pr)
			if why == "" {
				why = OutputsMiss(ctx, p, def, entry)
			}
		}
		r.msgs <- msg{kind: mCacheProbed, sr: sr, probe: pr, entry: entry, why: why, err: readErr}
	})
	return true
}

// probePool runs probes on goroutines that outlive one probe: a goroutine
// started for each grew a fresh stack each time (a few percent of the CPU
// of a 10,000-item cached fan-out). A probe goes to an idle worker, or to
// a new one when none is idle, so it never waits for a worker, and there
// are never more workers than probes ever in flight at once (each holds
// a job slot). Closing ch (at the end of Run) ends the idle workers.
type probePool struct{ ch chan func() }

func (p probePool) run(f func()) {
	select {
	case p.ch <- f:
	default:
		go p.work(f)
	}
}

func (p probePool) work(f func()) {
	for ; f != nil; f = <-p.ch {
		f()
	}
}

// cacheProbed acts on a probe: a hit settles the step as cached, a miss
// starts its attempt.
func (r *Runner) cacheProbed(sr *stepRun, m msg) {
	sr.cache.probe = m.probe
	if m.err != nil {
		// A miss, not a stop: the step runs, and its success replaces
		// the entry.
		r.warn(sr, "cache: cannot read the entry, the step runs: "+m.err.Error())
	}
	if r.intr || r.fatal != nil || r.stopping {
		r.freeSlot(sr) // it stays pending: settlePending or a resume decides
		return
	}
	if m.why != "" {
		r.commitMiss(sr, keyOf(m.probe), m.why)
		if r.fatal != nil {
			r.freeSlot(sr)
			return
		}
		r.startAttempt(sr) // the probe holds its job slot already
		return
	}
	e := m.entry
	st := sr.st
	now := r.now()
	st.Status = StatusCached
	st.StartedAt, st.FinishedAt = timep(now), timep(now)
	st.DurationMs = 0
	st.ExitCode = nil
	st.Error = ""
	st.Hash = m.probe.DefHash
	st.CacheKey = m.probe.Key
	st.CachedFrom = &CachedFrom{RunID: e.RunID, Attempt: e.Attempt, Seq: e.Seq}
	st.Outputs = e.Values
	hit := Event{Type: EvStepCacheHit, StepID: st.ID, Attempt: st.Attempt, Data: &CacheHit{
		CachedAttempt: e.Attempt, CachedRunID: e.RunID, CachedSeq: e.Seq, Key: e.Key,
	}}
	r.freeSlot(sr)
	// A hit starts nothing: like a success, it is held for the next commit
	// (commitLater), so that the hits of a fan-out that arrive together
	// are one transaction (see loop). Its dependents start only once it is
	// stored: a process's start, a join's decision and a cache_key command
	// commit what is held first.
	sr.cache.probe = nil // its key is in the record; nothing else reads it
	r.commitLater([]*StepState{st}, hit, r.statusEvent(sr))
	r.release(sr)
	if !r.hit {
		r.hit = true
		if r.CacheHit != nil {
			r.CacheHit()
		}
	}
}

func keyOf(pr *CacheProbe) string {
	if pr == nil {
		return ""
	}
	return pr.Key
}

func (r *Runner) commitMiss(sr *stepRun, key, why string) {
	r.commit(nil, Event{Type: EvStepCacheMiss, StepID: sr.st.ID, Attempt: sr.st.Attempt, Data: &CacheMiss{Key: key, Reason: why}})
}

// forced reports whether --force names the step (or, for an item, its
// fan-out step).
func (r *Runner) forced(sr *stepRun) bool {
	for _, id := range r.Force {
		if id == sr.def.ID || (sr.def.FanOutOf != "" && id == sr.def.FanOutOf) {
			return true
		}
	}
	return false
}

// hashOutputs is run by the attempt's goroutine after a successful
// process: it digests the declared outputs so that the scheduler does not.
func (r *Runner) hashOutputs(sr *stepRun, out *outcome) {
	if sr.cache.probe == nil || out.failed() || out.stoppedBy != "" {
		return
	}
	out.cacheOuts, out.cacheErr = HashOutputs(r.workCtx(), r.Plan, sr.def)
	if out.cacheOuts == nil && out.cacheErr == nil {
		out.cacheOuts = map[string]string{}
	}
}

// cacheSuccess sets the key on a successful step's record before its
// commit; it returns the warning to commit with it when the result cannot
// be cached.
func (r *Runner) cacheSuccess(sr *stepRun, out outcome) *Event {
	pr := sr.cache.probe
	if pr == nil {
		return nil
	}
	if out.cacheErr != nil {
		sr.cache.probe = nil
		msg := fmt.Sprintf("step %q exited 0 but its result is not cached: %v", sr.def.ID, out.cacheErr)
		return &Event{Type: EvWarning, StepID: sr.st.ID, Attempt: sr.st.Attempt, Data: &Warning{Message: msg}}
	}
	sr.st.CacheKey = pr.Key
	sr.cache.outs = out.cacheOuts
	return nil
}

// storeEntry writes the cache entry of a success just committed: its
// step_status event is the last event committed (r.seq).
func (r *Runner) storeEntry(sr *stepRun) {
	pr := sr.cache.probe
	if pr == nil || sr.st.CacheKey == "" || r.fatal != nil {
		return
	}
	e := &CacheEntry{
		Attempt: sr.st.Attempt, DefHash: pr.DefHash, Inputs: pr.Inputs, Key: pr.Key, KeyOut: pr.KeyOut,
		Mode: pr.Mode, Needs: pr.Needs, Outputs: sr.cache.outs, Values: sr.st.Outputs, Plan: r.Plan.Name, RunID: r.RunID,
		Seq: r.seq, Step: sr.def.ID, Time: r.now().UTC().Format(time.RFC3339Nano),
	}
	for _, v := range r.secrets {
		if m := NewMaskerOf([]string{v}); m != nil && !reflect.DeepEqual(m.CacheEntry(e), e) {
			e.Mask = append(e.Mask, []byte(v))
		}
	}
	if err := r.Cache.Put(e); err != nil {
		r.warn(sr, "cache: "+err.Error())
	}
	// A success is final in this session: nothing reads the probe again,
	// and a 10,000-item fan-out need not keep 10,000 of them.
	sr.cache.probe, sr.cache.outs = nil, nil
}

// dropEntry forgets a step's entry once an attempt of it failed: the
// failure is the newer fact about these inputs.
func (r *Runner) dropEntry(sr *stepRun) {
	if sr.cache.probe == nil {
		return
	}
	if err := r.Cache.Drop(r.Plan.Name, sr.def.ID); err != nil {
		r.warn(sr, "cache: "+err.Error())
	}
}

func (r *Runner) warn(sr *stepRun, text string) {
	r.commit(nil, Event{Type: EvWarning, StepID: sr.st.ID, Data: &Warning{Message: text}})
}

// keyCmdLimit bounds one cache_key command: its time (a command that hangs
// must not hold the step forever) and its output (it is kept in memory to
// be hashed).
const (
	keyCmdTime   = time.Minute
	keyCmdOutput = 16 << 20
)

// keyCmdWait bounds the wait for a cache_key command's output pipes once
// it has exited or been killed (a process it left behind may hold them).
const keyCmdWait = 2 * time.Second

// runKeyCmd runs one cache_key command and returns its stdout. Like a
// step, it runs in a process group of its own, and the whole group is
// killed when ctx is done, when it takes longer than keyCmdTime, and once
// it has exited: no process of it outlives the probe.
func runKeyCmd(ctx context.Context, argv []string, dir string, env []string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, keyCmdTime)
	defer cancel()
	c := osexec.Command(argv[0], argv[1:]...)
	c.Dir = dir
	c.Env = env
	out := &capped{max: keyCmdOutput}
	stderr := &capped{max: 64 << 10}
	c.Stdout, c.Stderr = out, stderr
	c.WaitDelay = keyCmdWait
	setGroup(c)
	if err := c.Start(); err != nil {
		return nil, err
	}
	g := newGroup(c)
	defer g.release()
	waited := make(chan error, 1)
	go func() { waited <- c.Wait() }()
	var err error
	select {
	case err = <-waited:
	case <-ctx.Done():
		_ = g.signal(true)
		<-waited
		err = ctx.Err()
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("killed after %s", keyCmdTime)
		}
	}
	_ = g.signal(true) // what it left running
	if err == nil && out.over {
		err = fmt.Errorf("its output is over %d MiB", keyCmdOutput>>20)
	}
	if err != nil {
		if line := lastLine(stderr.Bytes(), nil); line != "" {
			err = fmt.Errorf("%w: %s", err, line)
		}
		return nil, err
	}
	return out.Bytes(), nil
}

// capped keeps the first max bytes written to it and drops the rest.
type capped struct {
	bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.Len(); len(p) > room {
		c.over = true
		if room > 0 {
			c.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return c.Buffer.Write(p)
}
