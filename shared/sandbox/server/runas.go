package server

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/cairnrun/cairn/shared/contracts"
)

// EnvRunAs names the variable choosing the user commands run as:
// "uid:gid" (numbers), or "self" for sandboxd's own user. Unset, it is
// DefaultRunAs when sandboxd runs as root and "self" otherwise; a uid other
// than sandboxd's own needs root.
const EnvRunAs = "SANDBOXD_RUN_AS"

// DefaultRunAs is the user of commands when sandboxd runs as root: nobody.
const DefaultRunAs = "65534:65534"

// runAs returns the credential of commands for the value of EnvRunAs, given
// sandboxd's effective uid; nil means sandboxd's own user.
func runAs(value string, euid int) (*syscall.Credential, error) {
	if value == "" {
		if euid != 0 {
			return nil, nil
		}
		value = DefaultRunAs
	}
	if value == "self" {
		return nil, nil
	}
	u, g, ok := strings.Cut(value, ":")
	uid, err1 := strconv.ParseUint(u, 10, 32)
	gid, err2 := strconv.ParseUint(g, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return nil, fmt.Errorf("%s=%q: want uid:gid (numbers) or self: %w", EnvRunAs, value, contracts.ErrInvalid)
	}
	if int(uid) == euid {
		return nil, nil
	}
	if euid != 0 {
		return nil, fmt.Errorf("%s=%q: running commands as another user needs root (sandboxd runs as uid %d): %w", EnvRunAs, value, euid, contracts.ErrInvalid)
	}
	// Groups empty and NoSetGroups false: the supplementary groups are
	// cleared, so root's groups do not follow.
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// owned gives files the sandbox creates through the API to the user
// commands run as, so commands can change what a tool wrote. Paths are
// resolved in an os.Root of the workspace and chowned without following a
// final symlink: a command's symlink never makes sandboxd chown a file
// outside the workspace (the state directory above all).
type owned struct {
	contracts.SandboxAPI
	root     *os.Root
	uid, gid int
}

// chownTree gives the whole workspace to the commands' user (files a
// previous sandboxd wrote as root included). Walked inside the os.Root: a
// directory swapped for a symlink is not followed out of the workspace.
func (o owned) chownTree() error {
	return fs.WalkDir(o.root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // vanished meanwhile, or unreadable: skip it
		}
		if err := o.root.Lchown(p, o.uid, o.gid); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("giving %s to uid %d: %w", p, o.uid, err)
		}
		return nil
	})
}

// own chowns p and every directory leading to it inside the workspace.
func (o owned) own(p string) {
	p = path.Clean(strings.TrimPrefix(p, "/"))
	if p == "." || p == "" || strings.HasPrefix(p, "../") || p == ".." {
		return
	}
	parts := strings.Split(p, "/")
	for i := range parts {
		o.root.Lchown(strings.Join(parts[:i+1], "/"), o.uid, o.gid) // best effort: a racing command may remove it
	}
}

func (o owned) WriteFile(ctx context.Context, r contracts.WriteFileRequest) error {
	err := o.SandboxAPI.WriteFile(ctx, r)
	if err == nil {
		o.own(r.Path)
	}
	return err
}

func (o owned) EditFile(ctx context.Context, r contracts.EditFileRequest) (contracts.EditFileResult, error) {
	res, err := o.SandboxAPI.EditFile(ctx, r)
	if err == nil {
		o.own(r.Path)
	}
	return res, err
}

func (o owned) MakeDir(ctx context.Context, p string) error {
	err := o.SandboxAPI.MakeDir(ctx, p)
	if err == nil {
		o.own(p)
	}
	return err
}

// reachable checks that uid:gid may search every directory from / down to
// dir (mode bits; the supplementary groups are cleared): a command's
// working directory is entered after the switch of user.
func reachable(dir string, uid, gid uint32) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for p := abs; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		mode := fi.Mode().Perm()
		if ok {
			bit := fs.FileMode(0o001)
			switch {
			case st.Uid == uid:
				bit = 0o100
			case st.Gid == gid:
				bit = 0o010
			}
			if mode&bit == 0 {
				return fmt.Errorf("the workspace %s is out of reach of uid %d: %s (mode %v, owner %d:%d) is not searchable by it", abs, uid, p, mode, st.Uid, st.Gid)
			}
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}
