//go:build unix

package exec

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// specialFiles makes what a step could leave at $FABER_RESULT that is not
// a regular file: a FIFO without a writer, a symlink to /dev/zero.
func specialFiles(t *testing.T, dir string) map[string]string {
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	return map[string]string{"fifo": fifo, "zero": zero}
}
