package regfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestOpenReader(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	want := []byte("item 1\n")
	if err := os.WriteFile(file, want, 0o600); err != nil {
		t.Fatal(err)
	}
	r, size, err := OpenReader(file)
	if err != nil {
		t.Fatal(err)
	}
	if size != int64(len(want)) {
		t.Errorf("size %d, want %d", size, len(want))
	}
	got, err := io.ReadAll(r)
	if err != nil || string(got) != string(want) {
		t.Errorf("read %q, %v; want %q", got, err, want)
	}
	if n, err := r.Read(make([]byte, 4)); n != 0 || err != io.EOF {
		t.Errorf("read at the end: %d, %v; want 0, EOF", n, err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err == nil {
		t.Error("second Close succeeded")
	}

	_, _, err = OpenReader(filepath.Join(dir, "missing"))
	var pe *fs.PathError
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || pe.Op != "open" {
		t.Errorf("missing file: %v; want an open *fs.PathError for a file that does not exist", err)
	}
	var nr *NotRegular
	if _, _, err := OpenReader(dir); !errors.As(err, &nr) || !nr.Mode.IsDir() {
		t.Errorf("directory: %v; want NotRegular (a directory)", err)
	}
}
