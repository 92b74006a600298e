package exec

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/faber-run/faber/internal/regfile"
	"github.com/faber-run/faber/spec"
	"github.com/faber-run/faber/spec/subst"
)

// The cache key of a step (README, "Caching"): a SHA-256 over the step's
// definition hash (StepHash), the digests of its input files, the keys of
// the steps it needs, and the output of its cache_key commands. This file
// computes keys and compares them; cache.go is the scheduler's side.

// CacheEntry is what the cache keeps for one step of one plan: the key of
// its last successful attempt, what the key was made of (so that a miss can
// say why), the digests of its outputs, and which committed event recorded
// that success.
type CacheEntry struct {
	Attempt int               `json:"attempt"`
	DefHash string            `json:"def_hash"`
	Inputs  map[string]string `json:"inputs"`
	Key     string            `json:"key"`
	KeyOut  string            `json:"key_out,omitempty"`
	Mode    string            `json:"mode"`
	Needs   map[string]string `json:"needs"`
	Outputs map[string]string `json:"outputs"`
	Plan    string            `json:"plan"`
	RunID   string            `json:"run_id"`
	Seq     int64             `json:"seq"`
	Step    string            `json:"step"`
	Time    string            `json:"time"`
	// Mask holds the secret values (spec.Plan.Secrets) that appear in the
	// paths above, so that the entry is shown masked whether or not the run
	// that wrote it is still there. The file is private, as meta.json is.
	Mask [][]byte `json:"mask,omitempty"`
}

// CacheStore keeps one CacheEntry per plan name and step id, for the whole
// state dir. Get returns nil, nil when there is none.
type CacheStore interface {
	Get(plan, step string) (*CacheEntry, error)
	Put(e *CacheEntry) error
	Drop(plan, step string) error
}

// CacheProbe is a step's key as its files are now.
type CacheProbe struct {
	Key     string
	DefHash string
	Mode    string
	Inputs  map[string]string // path (relative to the step's dir) -> digest
	Needs   map[string]string // needed step id -> its key
	KeyOut  string            // digest of the cache_key commands' output; "" without any
}

// NeedKey is the key a step contributes to its dependents' keys: its cache
// key when it has one, else its definition hash (a step without inputs
// is never cached, so only its definition can be part of the key). The
// definition hash is computed only when it is needed; st may be nil.
func NeedKey(st *StepState, p *spec.Plan, def *spec.Step) string {
	if st != nil && st.CacheKey != "" {
		return st.CacheKey
	}
	return "def:" + StepHash(p, def)
}

// JoinKey is the key a fan-out's join step passes on to its dependents:
// its items' keys (NeedKey), in item order, hashed. A join is never cached
// itself; through this key a changed item changes what comes after.
func JoinKey(items []string) string {
	h := sha256.New()
	for _, k := range items {
		fmt.Fprintf(h, "%s\n", k)
	}
	return "join:" + hex.EncodeToString(h.Sum(nil))
}

// CacheVars are the variables of a step's inputs:, outputs: and
// cache_key: (the context and the item; built-ins stay as written, as in
// StepHash).
func CacheVars(p *spec.Plan, s *spec.Step) map[string]string {
	vars := make(map[string]string, len(p.Context)+4)
	for k, v := range p.Context {
		vars[k] = v
	}
	if s.Item != nil {
		for k, v := range s.Item.Vars() {
			vars[k] = v
		}
	}
	return vars
}

// ProbeCache computes the step's key from its input files now. keyOut is
// the cache_key commands' output digest ("" when it has none). Hashing
// stops with ctx's error once ctx is done.
func ProbeCache(ctx context.Context, p *spec.Plan, s *spec.Step, needs map[string]string, keyOut string) (*CacheProbe, error) {
	c := s.Cache
	vars := CacheVars(p, s)
	dir := WorkDir(p, s, vars)
	files, err := expandPaths(dir, c.Inputs, vars, false)
	if err != nil {
		return nil, err
	}
	digests, err := digestFiles(ctx, dir, files, c.Mode)
	if err != nil {
		return nil, err
	}
	pr := &CacheProbe{DefHash: StepHash(p, s), Mode: c.Mode, Inputs: digests, Needs: needs, KeyOut: keyOut}
	pr.Key = pr.key()
	return pr, nil
}

func (pr *CacheProbe) key() string {
	h := sha256.New()
	fmt.Fprintf(h, "faber-cache-v1\ndef %s\nmode %s\nkey_out %s\n", pr.DefHash, pr.Mode, pr.KeyOut)
	for _, k := range sortedKeys(pr.Inputs) {
		fmt.Fprintf(h, "in %q %s\n", k, pr.Inputs[k])
	}
	for _, k := range sortedKeys(pr.Needs) {
		fmt.Fprintf(h, "need %q %s\n", k, pr.Needs[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// KeyMiss says why an entry does not match a probe ("" when the keys are
// the same): the first difference, in the order definition, mode, inputs,
// upstream, cache_key.
func KeyMiss(e *CacheEntry, pr *CacheProbe) string {
	switch {
	case e == nil:
		return "no earlier success"
	case e.DefHash != pr.DefHash:
		return "definition changed"
	case e.Mode != pr.Mode:
		return "cache mode changed"
	}
	if why := mapDiff("input", e.Inputs, pr.Inputs); why != "" {
		return why
	}
	for _, k := range sortedKeys(pr.Needs) {
		if e.Needs[k] != pr.Needs[k] {
			return "upstream changed: " + k
		}
	}
	if len(e.Needs) != len(pr.Needs) {
		return "upstream changed"
	}
	if e.KeyOut != pr.KeyOut {
		return "cache_key output changed"
	}
	if e.Key != pr.Key {
		return "key changed"
	}
	return ""
}

func mapDiff(what string, old, now map[string]string) string {
	for _, k := range sortedKeys(now) {
		if d, ok := old[k]; ok && d != now[k] {
			return what + " changed: " + k
		}
	}
	for _, k := range sortedKeys(old) {
		if _, ok := now[k]; !ok && !strings.HasSuffix(k, noMatchSuffix) {
			return what + " removed: " + k
		}
	}
	for _, k := range sortedKeys(now) {
		if _, ok := old[k]; !ok && !strings.HasSuffix(k, noMatchSuffix) {
			return what + " added: " + k
		}
	}
	for _, k := range sortedKeys(now) {
		if _, ok := old[k]; !ok {
			return what + " missing: " + strings.TrimSuffix(k, noMatchSuffix) + " matches no file"
		}
	}
	for _, k := range sortedKeys(old) {
		if _, ok := now[k]; !ok {
			return what + " added: " + strings.TrimSuffix(k, noMatchSuffix) + " matches a file now"
		}
	}
	return ""
}

// OutputsMiss checks the outputs an entry recorded against the files now:
// "output missing: P" or "output changed: P", or "" when all are there.
func OutputsMiss(ctx context.Context, p *spec.Plan, s *spec.Step, e *CacheEntry) string {
	dir := WorkDir(p, s, CacheVars(p, s))
	names := sortedKeys(e.Outputs)
	for _, name := range names {
		if _, err := os.Stat(abs(dir, name)); err != nil {
			return "output missing: " + name
		}
	}
	now, err := digestFiles(ctx, dir, names, e.Mode)
	if err != nil {
		return "output unreadable: " + err.Error()
	}
	for _, name := range names {
		if now[name] != e.Outputs[name] {
			return "output changed: " + name
		}
	}
	return ""
}

// HashOutputs digests the step's declared outputs after a successful
// attempt. Every declared path or glob must match at least one file.
func HashOutputs(ctx context.Context, p *spec.Plan, s *spec.Step) (map[string]string, error) {
	vars := CacheVars(p, s)
	dir := WorkDir(p, s, vars)
	files, err := expandPaths(dir, s.Cache.Outputs, vars, true)
	if err != nil {
		return nil, err
	}
	return digestFiles(ctx, dir, files, s.Cache.Mode)
}

// KeyCommandsDigest runs the cache_key commands with run (which returns a
// command's stdout) and digests their outputs in order.
func KeyCommandsDigest(cmds []string, run func(cmd string) ([]byte, error)) (string, error) {
	if len(cmds) == 0 {
		return "", nil
	}
	h := sha256.New()
	for _, c := range cmds {
		out, err := run(c)
		if err != nil {
			return "", fmt.Errorf("cache_key %q: %w", c, err)
		}
		fmt.Fprintf(h, "%q %d\n", c, len(out))
		h.Write(out)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// expandPaths expands the step's patterns in dir into file names relative
// to dir (absolute for absolute patterns), sorted; a directory stands for
// the files under it. With must, a pattern that matches nothing is an
// error ("output missing: P"); an input pattern that matches nothing is
// kept as "P (no match)" so that a file appearing later changes the key.
func expandPaths(dir string, patterns []string, vars map[string]string, must bool) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	add := func(name string) {
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	for _, pat := range patterns {
		if x, err := subst.Expand(pat, vars); err == nil {
			pat = x
		}
		matches, err := filepath.Glob(abs(dir, pat))
		if err != nil {
			return nil, fmt.Errorf("%q: %w", pat, err)
		}
		if len(matches) == 0 {
			if must {
				return nil, &missingError{name: pat}
			}
			add(noMatch(pat))
			continue
		}
		for _, m := range matches {
			fi, err := os.Stat(m)
			if err != nil {
				return nil, err
			}
			if !fi.IsDir() {
				add(rel(dir, m))
				continue
			}
			err = filepath.WalkDir(m, func(path string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if d.Type().IsRegular() || d.Type()&fs.ModeSymlink != 0 {
					add(rel(dir, path))
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

type missingError struct{ name string }

func (e *missingError) Error() string { return "output missing: " + e.name }

const noMatchSuffix = " (no match)"

func noMatch(pat string) string { return filepath.ToSlash(pat) + noMatchSuffix }

func abs(dir, name string) string {
	name = filepath.FromSlash(name)
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(dir, name)
}

func rel(dir, path string) string {
	if r, err := filepath.Rel(dir, path); err == nil && !strings.HasPrefix(r, "..") {
		return filepath.ToSlash(r)
	}
	return filepath.ToSlash(path)
}

// digestFiles digests files (names relative to dir) in mode, several at
// once: hashing is bounded by the disk and the CPUs, not by one core. Only
// regular files are read (a FIFO, a device or a socket is an error naming
// it: reading one may never end), and every worker stops within one
// buffer's read once ctx is done.
func digestFiles(ctx context.Context, dir string, names []string, mode string) (map[string]string, error) {
	out := make(map[string]string, len(names))
	workers := runtime.GOMAXPROCS(0)
	if workers > len(names) {
		workers = len(names)
	}
	type res struct {
		name, digest string
		err          error
	}
	jobs := make(chan string)
	results := make(chan res)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := digestBufs.Get().(*[]byte)
			defer digestBufs.Put(buf)
			for name := range jobs {
				d, err := digestFile(ctx, abs(dir, name), mode, *buf)
				if nr := (*regfile.NotRegular)(nil); errors.As(err, &nr) {
					err = fmt.Errorf("%s is %w", name, err)
				}
				results <- res{name, d, err}
			}
		}()
	}
	go func() {
		for _, n := range names {
			if strings.HasSuffix(n, noMatchSuffix) {
				results <- res{name: n, digest: "-"}
				continue
			}
			jobs <- n
		}
		close(jobs)
		wg.Wait()
		close(results)
	}()
	var first error
	for r := range results {
		if r.err != nil && first == nil {
			first = r.err
		}
		out[r.name] = r.digest
	}
	return out, first
}

// digestBufs are digestFiles' read buffers, kept between calls: a step's
// digest is taken once per item of a fan-out, and a new 1 MiB buffer for
// each was 10 GB of garbage in a cached run of 10,000 items.
var digestBufs = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

func digestFile(ctx context.Context, path, mode string, buf []byte) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if mode == spec.CacheMtime {
		fi, err := os.Stat(path)
		if err != nil {
			return "", err
		}
		if !fi.Mode().IsRegular() {
			return "", &regfile.NotRegular{Mode: fi.Mode()}
		}
		return "m:" + strconv.FormatInt(fi.Size(), 10) + ":" + strconv.FormatInt(fi.ModTime().UnixNano(), 10), nil
	}
	// Opened without waiting (a FIFO's open would wait for a writer), then
	// refused unless it is a regular file.
	f, _, err := regfile.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.CopyBuffer(h, ctxReader{ctx, f}, buf); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ctxReader reads until ctx is done; it also hides WriterTo/ReaderFrom so
// that CopyBuffer uses the buffer (so ctx is checked at least every 1 MiB).
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// IsOutputMissing reports whether err is HashOutputs' "output missing".
func IsOutputMissing(err error) bool {
	var m *missingError
	return errors.As(err, &m)
}
