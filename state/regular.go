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
	f, size, err := regfile.OpenReader(path)
	var nr *regfile.NotRegular
	if errors.As(err, &nr) {
		return nil, fmt.Errorf("%s is %w", path, nr)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > max {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d it may be", path, size, max)
	}
	// The size stat gave and one byte more, to see the end in one more
	// read; a file that grew meanwhile is read on, to max+1 bytes.
	b := make([]byte, 0, size+1)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		room := b[len(b):cap(b)]
		if left := max + 1 - int64(len(b)); int64(len(room)) > left {
			room = room[:left]
		}
		n, rerr := f.Read(room)
		b = b[:len(b)+n]
		if rerr == io.EOF || int64(len(b)) > max {
			break
		}
		// A short read that ends at the size stat gave is the end: the
		// read that would say so is a system call per file (a cached
		// fan-out reads an entry per item). What is read is the file as
		// it was at that size, as if read a moment earlier.
		if rerr == nil && n < len(room) && int64(len(b)) == size {
			break
		}
		if rerr != nil {
			return b, rerr
		}
	}
	if int64(len(b)) > max {
		return b, fmt.Errorf("%s grew past the %d bytes it may be", path, max)
	}
	return b, nil
}
