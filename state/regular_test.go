package state

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestReadRegular: a file is read whole whatever its size (the read that
// ends at the size stat gave is the last), and one over max is refused.
func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{0, 1, 100, 4095, 4096, 4097, 1<<20 + 1} {
		b := bytes.Repeat([]byte("abcdefg"), n/7+1)[:n]
		p := filepath.Join(dir, strconv.Itoa(n))
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := readRegular(p, 2<<20)
		if err != nil || !bytes.Equal(got, b) {
			t.Errorf("%d bytes: read %d, %v", n, len(got), err)
		}
		if n > 0 {
			if _, err := readRegular(p, int64(n-1)); err == nil {
				t.Errorf("%d bytes with a max of %d: no error", n, n-1)
			}
		}
	}
}
