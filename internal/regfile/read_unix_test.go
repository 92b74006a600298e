//go:build unix

package regfile

import (
	"errors"
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"
)

// TestOpenReaderFIFO: a FIFO is refused without waiting for a writer.
func TestOpenReaderFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// No writer: an open that waited would hang here.
	var nr *NotRegular
	if _, _, err := OpenReader(fifo); !errors.As(err, &nr) || nr.Mode&fs.ModeNamedPipe == 0 {
		t.Errorf("FIFO: %v; want NotRegular (a FIFO)", err)
	}
}
