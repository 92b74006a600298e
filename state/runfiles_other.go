//go:build !linux

package state

import (
	"os"
	"path/filepath"
)

// runFiles reads the small files of one run directory and checks stamps
// there (see runfiles_linux.go), by path.
type runFiles struct{ dir string }

func openRunFiles(dir string) (runFiles, error) { return runFiles{dir}, nil }

func (r runFiles) in(sub string) runFiles { return runFiles{filepath.Join(r.dir, sub)} }

func (r runFiles) close() {}

func (r runFiles) read(name string, _ []byte) ([]byte, error) {
	return readSmall(filepath.Join(r.dir, name))
}

func (r runFiles) matches(f FileStamp) bool {
	fi, err := os.Lstat(filepath.Join(r.dir, f.Name))
	return err == nil && f.fits(fi)
}
