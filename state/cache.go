package state

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// The step cache (README, "Caching") is state-dir-wide: one small file per
// plan and step under <state-dir>/cache, private like the rest of the state
// dir (0700, 0600), each replaced atomically (written beside, renamed), so
// a reader sees an old entry or a new one, never half of one. The file is
// synced before the rename only when the run's commits are (FABER_SYNC=1):
// otherwise an entry, like every other file of the run, survives a crash
// of faber but not a power loss, after which it may be missing or empty,
// which is a miss (the step runs), never a hit. The entries are opaque
// here; package exec defines them.

const dirCache = "cache"

// CacheDir is the directory of the step cache.
func CacheDir(stateDir string) string { return filepath.Join(stateDir, dirCache) }

// dirCacheTemp, under the cache, holds the entries being written, so that
// the sweep of a dead writer's files (CleanCacheTemps) reads a directory of
// a few files, not one of every entry.
const dirCacheTemp = ".tmp"

func cacheTempDir(stateDir string) string { return filepath.Join(CacheDir(stateDir), dirCacheTemp) }

func cacheFile(stateDir, plan, step string) string {
	sum := sha256.Sum256([]byte(plan + "\x00" + step))
	return filepath.Join(CacheDir(stateDir), hex.EncodeToString(sum[:16])+".json")
}

// CacheGet returns the entry of a plan's step, or ErrNotFound.
func CacheGet(stateDir, plan, step string) ([]byte, error) {
	b, err := readRegular(cacheFile(stateDir, plan, step), MaxCacheEntry)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotFound
	}
	return b, err
}

// MaxCacheEntry bounds a cache entry file: an entry holds a digest per
// input and output file, some 100 bytes each, so 64 MiB is half a million
// files; anything bigger is not an entry faber wrote.
const MaxCacheEntry = 64 << 20

// syncEntry syncs a new entry's file (a variable for the tests).
var syncEntry = (*os.File).Sync

// CachePut replaces the entry of a plan's step; with sync, the new file is
// on the device before it replaces the old one.
func CachePut(stateDir, plan, step string, data []byte, sync bool) error {
	tmpDir := cacheTempDir(stateDir)
	if err := os.MkdirAll(tmpDir, 0o700); err != nil {
		return err
	}
	// The writer's pid in the name lets a later faber remove the file
	// if this one dies before the rename (CleanCacheTemps).
	f, err := os.CreateTemp(tmpDir, cacheTempPrefix+strconv.Itoa(os.Getpid())+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil && sync {
		err = syncEntry(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, cacheFile(stateDir, plan, step))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write cache entry of step %q: %w", step, err)
	}
	return nil
}

// CacheDrop removes the entry of a plan's step, if any.
func CacheDrop(stateDir, plan, step string) error {
	err := os.Remove(cacheFile(stateDir, plan, step))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// CacheEntryFile is one file of the cache, as CacheList reads it.
type CacheEntryFile struct {
	Path string
	Data []byte
}

// CacheList reads every entry, in file name order. Files left by an
// interrupted write (.entry-*) are skipped.
func CacheList(stateDir string) ([]CacheEntryFile, error) {
	ents, err := os.ReadDir(CacheDir(stateDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []CacheEntryFile
	for _, e := range ents {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		p := filepath.Join(CacheDir(stateDir), e.Name())
		b, err := readRegular(p, MaxCacheEntry)
		if err != nil {
			return nil, err
		}
		out = append(out, CacheEntryFile{Path: p, Data: b})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// CacheRemove removes one file CacheList returned.
func CacheRemove(path string) error {
	err := os.Remove(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
