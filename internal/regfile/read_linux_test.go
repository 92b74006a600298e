package regfile

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestOpenReaderCloseOnExec: a step started while faber reads a file must
// not inherit the descriptor.
func TestOpenReaderCloseOnExec(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r, _, err := OpenReader(file)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(r.fd), syscall.F_GETFD, 0)
	if errno != 0 || flags&syscall.FD_CLOEXEC == 0 {
		t.Errorf("descriptor flags %#x (%v): not close-on-exec", flags, errno)
	}
}
