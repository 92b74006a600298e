package state

import (
	"errors"
	"fmt"
	"io"

	"github.com/faber-run/faber/internal/regfile"
)

// readRegular reads a file that must be a regular file (after symlinks) of
// at most max bytes. A FIFO, device or socket is an error naming the path,
// never a read that blocks or does not end; so is a bigger file.
func readRegular(path string, max int64) ([]byte, error) {
	f, fi, err := regfile.Open(path)
	var nr *regfile.NotRegular
	if errors.As(err, &nr) {
		return nil, fmt.Errorf("%s is %w", path, nr)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > max {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d it may be", path, fi.Size(), max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(b)) > max {
		err = fmt.Errorf("%s grew past the %d bytes it may be", path, max)
	}
	return b, err
}
