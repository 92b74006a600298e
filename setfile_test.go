//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadSetFile: --set-file drops one trailing newline (LF or CRLF) and
// nothing else, reads only a regular file of at most 64 KiB, and never
// waits on a FIFO.
func TestReadSetFile(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ content, want string }{
		{"s3cret\n", "s3cret"},
		{"s3cret", "s3cret"},
		{"s3cret\r\n", "s3cret"},
		{"s3cret\n\n", "s3cret\n"},
		{"a\nb\n", "a\nb"},
		{"x\r", "x\r"},
		{"\xff\x00 'q\"\\\n", "\xff\x00 'q\"\\"},
		{strings.Repeat("v", maxSetFile), strings.Repeat("v", maxSetFile)},
	} {
		p := filepath.Join(dir, "v")
		if err := os.WriteFile(p, []byte(c.content), 0o600); err != nil {
			t.Fatal(err)
		}
		if got, err := readSetFile(p); err != nil || got != c.want {
			t.Errorf("readSetFile(%q) = %q, %v; want %q", c.content, got, err, c.want)
		}
	}
	big := filepath.Join(dir, "big")
	os.WriteFile(big, make([]byte, maxSetFile+1), 0o600)
	if _, err := readSetFile(big); err == nil || !strings.Contains(err.Error(), "at most 65536 bytes") {
		t.Errorf("a file over 64 KiB: %v", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFO: %v", err)
	}
	if _, err := readSetFile(fifo); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a FIFO: %v", err)
	}
}
