// Package registry remembers the state dirs faber has used, so that
// 'faber list --all' and 'faber ui' can show the runs of every one of them.
//
// The registry is one small file under the user's state directory (Locate):
// JSON lines {"dir": ABS, "seen": RFC3339}, one per time a state dir was
// registered on a new day. Writers append one line with a single O_APPEND
// write (concurrent faber processes do not tear each other's lines); readers
// dedupe, keeping the latest seen; a rewrite (Rewrite, for prune) writes a
// temporary file and renames it over the old one.
//
// Nothing here may fail or slow a run: callers treat an error as at most a
// warning, and an unusable home (HOME unset or not a directory) disables the
// registry instead of creating one.
package registry

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Env is FABER_REGISTRY: "off" disables the registry.
const Env = "FABER_REGISTRY"

// fileName is the registry's name in faber's state directory.
const fileName = "state-dirs"

// maxSize bounds what Read reads: a registry is a few lines per state dir
// and day; a larger file is not one faber wrote.
const maxSize = 4 << 20

// ErrOff is what Locate returns when the registry is disabled
// (FABER_REGISTRY=off) or has no usable place (no home directory).
var ErrOff = errors.New("the registry of state dirs is off")

// Locate returns the registry's path: $XDG_STATE_HOME/faber/state-dirs
// when XDG_STATE_HOME is set to an absolute path, else under the home
// directory as the platform keeps state (~/.local/state on Linux and the
// BSDs, ~/Library/Application Support on macOS, %LocalAppData% on
// Windows). getenv reads the environment (os.Getenv), goos is
// runtime.GOOS. ErrOff when FABER_REGISTRY=off or when the home directory
// is not one (HOME unset, or not an existing directory): the registry is
// then skipped, never created somewhere odd.
func Locate(getenv func(string) string, goos string) (string, error) {
	if strings.EqualFold(strings.TrimSpace(getenv(Env)), "off") {
		return "", ErrOff
	}
	if x := getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "faber", fileName), nil
	}
	var base string
	switch goos {
	case "windows":
		base = getenv("LocalAppData")
		if base == "" {
			return "", ErrOff
		}
	default:
		home := getenv("HOME")
		if home == "" || !filepath.IsAbs(home) {
			return "", ErrOff
		}
		if fi, err := os.Stat(home); err != nil || !fi.IsDir() {
			return "", ErrOff
		}
		if goos == "darwin" {
			base = filepath.Join(home, "Library", "Application Support")
		} else {
			base = filepath.Join(home, ".local", "state")
		}
	}
	if fi, err := os.Stat(base); err != nil && !errors.Is(err, os.ErrNotExist) || err == nil && !fi.IsDir() {
		return "", ErrOff
	}
	return filepath.Join(base, "faber", fileName), nil
}

// Entry is one registered state dir.
type Entry struct {
	Dir  string    `json:"dir"`
	Seen time.Time `json:"seen"`
}

// Read returns the registered state dirs, each once with its latest seen,
// in the order they were first registered. A missing file is no entries;
// lines that are not entries (a torn write, a hand edit) are skipped.
func Read(path string) ([]Entry, error) {
	b, err := readSmall(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	return parse(b), nil
}

func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 && fi.Size() <= maxSize {
		buf.Grow(int(fi.Size()) + bytes.MinRead) // one allocation, not a doubling series
	}
	if _, err := buf.ReadFrom(&limited{f, maxSize}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

type limited struct {
	f *os.File
	n int64
}

func (l *limited) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, fmt.Errorf("%s: larger than %d bytes: not a registry faber wrote", l.f.Name(), maxSize)
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.f.Read(p)
	l.n -= int64(n)
	return n, err
}

func parse(b []byte) []Entry {
	var out []Entry
	at := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), maxSize)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var e Entry
		if line[0] == '{' {
			if json.Unmarshal(line, &e) != nil {
				continue
			}
		} else {
			e.Dir = string(line) // a bare path: the plain form of a line
		}
		if e.Dir == "" || !filepath.IsAbs(e.Dir) {
			continue
		}
		e.Dir = filepath.Clean(e.Dir)
		if i, ok := at[e.Dir]; ok {
			if e.Seen.After(out[i].Seen) {
				out[i].Seen = e.Seen
			}
			continue
		}
		at[e.Dir] = len(out)
		out = append(out, e)
	}
	return out
}

// Remember registers dir (absolute) as seen at now, unless the registry
// already lists it as seen on now's day: the common case is one read of a
// small file and no write. The line is appended with one write, so that
// concurrent writers never interleave within a line.
func Remember(path, dir string, now time.Time) error {
	dir = filepath.Clean(dir)
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("registry: %q is not an absolute path", dir)
	}
	b, err := readSmall(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if seenOn(b, dir, now) {
		return nil
	}
	line, err := json.Marshal(Entry{Dir: dir, Seen: now.Truncate(time.Second)})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(append(line, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// seenOn reports whether the registry b lists dir as seen on now's day.
// Every run asks, and a registry only grows until a prune tidies it (a CI
// machine that runs in a fresh directory each time gathers thousands of
// lines), so only the lines that mention dir are decoded. A line that
// names dir only in a form that cleans to it ("/a//b") is not looked at:
// the worst that does is one more line, which readers merge.
func seenOn(b []byte, dir string, now time.Time) bool {
	q, _ := json.Marshal(dir)
	needles := [][]byte{q[1 : len(q)-1]} // dir as it is spelt inside a JSON string
	if raw := []byte(dir); !bytes.Equal(raw, needles[0]) {
		needles = append(needles, raw) // as a bare path, or a line not written by faber
	}
	var mention []byte
	for _, needle := range needles {
		for i := 0; i < len(b); {
			j := bytes.Index(b[i:], needle)
			if j < 0 {
				break
			}
			j += i
			start := bytes.LastIndexByte(b[:j], '\n') + 1
			end := len(b)
			if k := bytes.IndexByte(b[j:], '\n'); k >= 0 {
				end = j + k + 1
			}
			mention = append(append(mention, b[start:end]...), '\n')
			i = end
		}
	}
	y, m, d := now.Date()
	for _, e := range parse(mention) {
		if e.Dir == dir {
			ey, em, ed := e.Seen.In(now.Location()).Date()
			if ey == y && em == m && ed == d {
				return true
			}
		}
	}
	return false
}

// Usable reports whether a registered dir still holds runs: it exists and
// has a runs/ directory. Entries that are not are dropped by Rewrite and
// skipped by readers.
func Usable(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, "runs"))
	return err == nil && fi.IsDir()
}

// Rewrite keeps the entries for which keep is true and drops the others,
// writing a temporary file and renaming it over the registry (a reader sees
// the old file or the new one). It returns the dirs dropped; when none is,
// the file is left as it is. An append that comes between the read and the
// rename is lost; the writer registers its dir again on its next run.
func Rewrite(path string, keep func(Entry) bool) (dropped []string, err error) {
	entries, err := Read(path)
	if err != nil || len(entries) == 0 {
		return nil, err
	}
	var buf bytes.Buffer
	for _, e := range entries {
		if !keep(e) {
			dropped = append(dropped, e.Dir)
			continue
		}
		line, err := json.Marshal(e)
		if err != nil {
			return nil, err
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	if len(dropped) == 0 {
		return nil, nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), fileName+".*.tmp")
	if err != nil {
		return nil, err
	}
	name := tmp.Name()
	defer os.Remove(name) // after the rename there is nothing to remove
	if err := tmp.Chmod(0o600); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		tmp.Close()
		return nil, err
	}
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	if err := os.Rename(name, path); err != nil {
		return nil, err
	}
	return slices.Clip(dropped), nil
}
