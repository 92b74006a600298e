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
	// Values are what the step published ($FABER_OUTPUTS): a cached step
	// has them again.
	Values []Output `json:"values,omitempty"`
	Plan   string   `json:"plan"`
	RunID  string   `json:"run_id"`
	Seq    int64    `json:"seq"`
	Step   string   `json:"step"`
	Time   string   `json:"time"`
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
	var digests map[string]string
	if len(c.Inputs) == 1 && c.Mode != spec.CacheMtime {
		if name, d, ok := digestLiteral(ctx, dir, c.Inputs[0], vars); ok {
			digests = map[string]string{name: d}
		}
	}
	if digests == nil {
		files, err := expandPaths(dir, c.Inputs, vars, false)
		if err != nil {
			return nil, err
		}
		if digests, err = digestFiles(ctx, dir, files, c.Mode); err != nil {
			return nil, err
		}
	}
	pr := &CacheProbe{DefHash: StepHash(p, s), Mode: c.Mode, Inputs: digests, Needs: needs, KeyOut: keyOut}
	pr.Key = pr.key()
	return pr, nil
}

func (pr *CacheProbe) key() string {
	// What it hashes is fmt's "faber-cache-v1\ndef %s\nmode %s\nkey_out %s\n",
	// then "in %q %s\n" per input and "need %q %s\n" per upstream step,
	// built in one buffer (%q of a string is strconv.Quote).
	b := make([]byte, 0, 256)
	b = append(b, "faber-cache-v1\ndef "...)
	b = append(b, pr.DefHash...)
	b = append(b, "\nmode "...)
	b = append(b, pr.Mode...)
	b = append(b, "\nkey_out "...)
	b = append(b, pr.KeyOut...)
	b = append(b, '\n')
	for _, k := range sortedKeys(pr.Inputs) {
		b = append(b, "in "...)
		b = strconv.AppendQuote(b, k)
		b = append(b, ' ')
		b = append(b, pr.Inputs[k]...)
		b = append(b, '\n')
	}
	for _, k := range sortedKeys(pr.Needs) {
		b = append(b, "need "...)
		b = strconv.AppendQuote(b, k)
		b = append(b, ' ')
		b = append(b, pr.Needs[k]...)
		b = append(b, '\n')
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
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
		matches, infos, err := glob(abs(dir, pat))
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
		for i, m := range matches {
			fi := infos[i]
			if fi == nil {
				if fi, err = os.Stat(m); err != nil {
					return nil, err
				}
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

// glob is filepath.Glob, with the os.Stat of each match when it has it
// (nil otherwise): a path without a wildcard (a fan-out item's one input)
// costs one stat, not Glob's lstat and then a stat.
func glob(pattern string) ([]string, []fs.FileInfo, error) {
	if !strings.ContainsAny(pattern, globMeta) {
		fi, err := os.Stat(pattern)
		if err == nil {
			return []string{pattern}, []fs.FileInfo{fi}, nil
		}
		if _, lerr := os.Lstat(pattern); lerr != nil {
			return nil, nil, nil // no match, as Glob says
		}
		return []string{pattern}, []fs.FileInfo{nil}, nil // a dangling symlink: Stat's error, as before
	}
	m, err := filepath.Glob(pattern)
	return m, make([]fs.FileInfo, len(m)), err
}

// globMeta are the characters filepath.Glob treats as special (its
// hasMeta; on Windows the backslash is a separator, not an escape).
var globMeta = func() string {
	if runtime.GOOS == "windows" {
		return "*?["
	}
	return `*?[\`
}()

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
// buffer's read once ctx is done. A single file (an item's one input) is
// digested on the caller's goroutine.
func digestFiles(ctx context.Context, dir string, names []string, mode string) (map[string]string, error) {
	out := make(map[string]string, len(names))
	one := func(name string) (string, error) {
		if strings.HasSuffix(name, noMatchSuffix) {
			return "-", nil
		}
		d, err := digestFile(ctx, abs(dir, name), mode)
		if nr := (*regfile.NotRegular)(nil); errors.As(err, &nr) {
			err = fmt.Errorf("%s is %w", name, err)
		}
		return d, err
	}
	workers := runtime.GOMAXPROCS(0)
	if workers > len(names) {
		workers = len(names)
	}
	if workers <= 1 {
		var first error
		for _, n := range names {
			d, err := one(n)
			if err != nil && first == nil {
				first = err
			}
			out[n] = d
		}
		return out, first
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
			for name := range jobs {
				d, err := one(name)
				results <- res{name, d, err}
			}
		}()
	}
	go func() {
		for _, n := range names {
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

// digestBufs holds digestFile's 1 MiB read buffers, reused: one made for
// each probe cost a 10,000-item fan-out's probes 10 GB of allocation, half
// their CPU spent clearing it, and a peak heap of hundreds of MB.
// A file smaller than a small buffer (a fan-out item's input, most often)
// is read with one of those instead: the pool is emptied by collections,
// which a big run's pace makes frequent, and every 1 MiB buffer made again
// is a MiB of fresh pages to fault in and clear.
var digestBufs = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

var smallDigestBufs = sync.Pool{New: func() any { b := make([]byte, smallDigestBuf); return &b }}

const smallDigestBuf = 32 << 10

func digestFile(ctx context.Context, path, mode string) (string, error) {
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
	f, size, err := regfile.OpenReader(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return digestReader(ctx, f, size)
}

// digestLiteral digests the one input pattern of a step when it has no
// wildcard and names a regular file (a fan-out item's one input), opening
// it once: expandPaths' stat and digestFile's open would look its path up
// twice. It gives the name and digest expandPaths and digestFiles would;
// ok is false whenever they must decide instead (no such file, a
// directory, anything but a regular file, an error), and they then do
// what they always did.
func digestLiteral(ctx context.Context, dir, pat string, vars map[string]string) (name, digest string, ok bool) {
	if x, err := subst.Expand(pat, vars); err == nil {
		pat = x
	}
	path := abs(dir, pat)
	if strings.ContainsAny(path, globMeta) || ctx.Err() != nil {
		return "", "", false
	}
	f, size, err := regfile.OpenReader(path)
	if err != nil {
		return "", "", false
	}
	defer f.Close()
	d, err := digestReader(ctx, f, size)
	if err != nil {
		return "", "", false
	}
	return rel(dir, path), d, true
}

// digestReader is the sha256 digest of f, of size bytes when opened.
func digestReader(ctx context.Context, f io.Reader, size int64) (string, error) {
	h := sha256.New()
	pool := &digestBufs
	if size < smallDigestBuf {
		pool = &smallDigestBufs
	}
	bp := pool.Get().(*[]byte)
	defer pool.Put(bp)
	if _, err := io.CopyBuffer(h, &ctxReader{ctx: ctx, r: f, left: size}, *bp); err != nil {
		return "", err
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])), nil
}

// ctxReader reads until ctx is done; it also hides WriterTo/ReaderFrom so
// that CopyBuffer uses the buffer (so ctx is checked at least every 1 MiB).
// left is what is left of the size stat gave: a short read that ends there
// is the end of the file (the file as it was at that size), without the
// read that would return 0 — a system call per input of a cached fan-out's
// items. A file that grew is read on to its end.
type ctxReader struct {
	ctx  context.Context
	r    io.Reader
	left int64
	end  bool
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if c.end {
		return 0, io.EOF
	}
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if err == nil && n < len(p) && c.left == 0 {
		c.end = true
	}
	return n, err
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
