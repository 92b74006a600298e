package spec

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/faber-run/faber/internal/regfile"
)

// ReadPlanFile reads a plan file. Only a regular file (after symlinks) is
// read: a FIFO, a device or a socket is an error naming the path, never a
// read that waits or does not end. A file over MaxPlanSize is an
// *Invalid, as Parse would say, without reading it; one that grows past it
// while read is cut at MaxPlanSize+1 bytes, which Parse refuses.
func ReadPlanFile(path string) ([]byte, error) {
	return readRegular(path, MaxPlanSize, func(size int64) error {
		return &Invalid{Errors: []Diagnostic{{File: path, Message: sizeMessage(size)}}}
	})
}

// maxLinesFile bounds a foreach lines: file: MaxItems lines of up to some
// 2.5 KiB each.
const maxLinesFile = 256 << 20

// readRegular reads a regular file of at most max bytes; tooBig makes the
// error for a bigger one. One that grows while read is cut at max+1 bytes.
func readRegular(path string, max int64, tooBig func(size int64) error) ([]byte, error) {
	f, fi, err := regfile.Open(path)
	var nr *regfile.NotRegular
	if errors.As(err, &nr) {
		return nil, &fs.PathError{Op: "read", Path: path, Err: nr}
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > max {
		return nil, tooBig(fi.Size())
	}
	return io.ReadAll(io.LimitReader(f, max+1))
}

func sizeMessage(n int64) string {
	return fmt.Sprintf("the plan is %d bytes; a plan file may be at most %d bytes (%d MiB): every run keeps a copy of its plan", n, MaxPlanSize, MaxPlanSize>>20)
}
