//go:build unix

package exec

import (
	"context"
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

// TestDigestLiteralFIFO: a FIFO input is left to the general path, which
// refuses it, never opened for a read that waits.
func TestDigestLiteralFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if name, _, ok := digestLiteral(context.Background(), dir, "fifo", nil); ok {
		t.Errorf("a FIFO digested as %s", name)
	}
}
