package regfile

import (
	"io"
	"io/fs"
	"syscall"
)

// Reader is a regular file open for reading, opened by OpenReader.
//
// On Linux it is a bare file descriptor: an os.File would try to add it to
// Go's poller, and epoll refuses regular files (a failed epoll_ctl at every
// open; reads of a regular file block in the kernel either way). A probe of
// a cached step opens two files, its entry and its input.
type Reader struct {
	fd   int
	path string
}

// OpenReader opens path for reading as Open does (without waiting, refused
// with a *NotRegular unless a regular file) and returns its size. Its errors
// are the *fs.PathError an os.File gives.
func OpenReader(path string) (*Reader, int64, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, 0, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var st syscall.Stat_t
	for {
		err = syscall.Fstat(fd, &st)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		syscall.Close(fd)
		return nil, 0, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if m := fileMode(uint32(st.Mode)); !m.IsRegular() {
		syscall.Close(fd)
		return nil, 0, &NotRegular{Mode: m}
	}
	return &Reader{fd: fd, path: path}, st.Size, nil
}

// fileMode is the type bits of a stat mode as fs.FileMode has them.
func fileMode(m uint32) fs.FileMode {
	switch m & syscall.S_IFMT {
	case syscall.S_IFREG:
		return 0
	case syscall.S_IFDIR:
		return fs.ModeDir
	case syscall.S_IFIFO:
		return fs.ModeNamedPipe
	case syscall.S_IFSOCK:
		return fs.ModeSocket
	case syscall.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		return fs.ModeDevice
	case syscall.S_IFLNK:
		return fs.ModeSymlink
	}
	return fs.ModeIrregular
}

// Read reads as os.File's Read does: io.EOF at the end.
func (r *Reader) Read(p []byte) (int, error) {
	if r.fd < 0 {
		return 0, &fs.PathError{Op: "read", Path: r.path, Err: fs.ErrClosed}
	}
	if len(p) == 0 {
		return 0, nil
	}
	if len(p) > maxRW {
		p = p[:maxRW]
	}
	for {
		n, err := syscall.Read(r.fd, p)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, &fs.PathError{Op: "read", Path: r.path, Err: err}
		}
		if n == 0 {
			return 0, io.EOF
		}
		return n, nil
	}
}

// maxRW is the most os.File reads at once (1 GiB), for the same reason:
// some systems refuse bigger reads.
const maxRW = 1 << 30

// Close closes the file; closing it again is an error, as for an os.File.
func (r *Reader) Close() error {
	if r.fd < 0 {
		return &fs.PathError{Op: "close", Path: r.path, Err: fs.ErrClosed}
	}
	fd := r.fd
	r.fd = -1
	if err := syscall.Close(fd); err != nil {
		return &fs.PathError{Op: "close", Path: r.path, Err: err}
	}
	return nil
}
