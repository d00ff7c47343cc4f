package snapshot

import (
	"io/fs"
	"syscall"
)

// identity tells whether a file changed since it was hashed: a write moves
// its ctime even when its mtime is set back.
type identity struct {
	known              bool
	ino                uint64
	size, mtime, ctime int64
}

func identityOf(fi fs.FileInfo) identity {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return identity{}
	}
	return identity{known: true, ino: st.Ino, size: st.Size, mtime: fi.ModTime().UnixNano(),
		ctime: st.Ctim.Sec*1e9 + st.Ctim.Nsec}
}

// links is the file's hard link count (1 when unknown).
func links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// owner is the file's uid (-1 when unknown).
func owner(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
