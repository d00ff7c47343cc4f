package local

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

// Commands as another user: run as root, sandboxd (SANDBOXD_RUN_AS) and the
// Provider (cairn dev: CAIRN_SANDBOX_RUN_AS) run every command as an
// unprivileged user (Options.Credential) that owns the workspace but
// cannot reach the call ledger nor anything else of the runtime's.

// DefaultRunAs is the user of commands when the process running them is
// root: nobody.
const DefaultRunAs = "65534:65534"

// RunAs returns the credential of commands for a run-as setting, given the
// effective uid of this process: "uid:gid" (numbers), "self" (this
// process's user), or "" (DefaultRunAs when euid is 0, else "self"). nil
// means this process's own user. A uid other than euid needs root. Errors
// wrap ErrInvalid; the caller prefixes the setting's name.
func RunAs(value string, euid int) (*syscall.Credential, error) {
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
		return nil, fmt.Errorf("want uid:gid (numbers) or self: %w", contracts.ErrInvalid)
	}
	if int(uid) == euid {
		return nil, nil
	}
	if euid != 0 {
		return nil, fmt.Errorf("running commands as another user needs root (this process runs as uid %d): %w", euid, contracts.ErrInvalid)
	}
	// Groups empty and NoSetGroups false: the supplementary groups are
	// cleared, so root's groups do not follow.
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// Owned is a Sandbox whose commands run as another user
// (Options.Credential): every file or directory its WriteFile, EditFile
// and MakeDir create is given to that user too, so a later command can
// change what a tool wrote. Paths are chowned through the sandbox's
// os.Root without following a final symlink: a command's symlink never
// makes this process chown a file outside the workspace (the ledger above
// all). The other methods (CallOutcome and CancelCall included) are the
// Sandbox's.
type Owned struct {
	*Sandbox
}

// Own wraps l so that what it creates belongs to the user its commands run
// as. Without a Credential nothing is chowned.
func Own(l *Sandbox) Owned { return Owned{l} }

// ChownTree gives the whole workspace to the commands' user (files this
// process wrote before, as root, included). Walked inside the os.Root: a
// directory swapped for a symlink is not followed out of the workspace.
func (o Owned) ChownTree() error {
	c := o.opts.Credential
	if c == nil {
		return nil
	}
	return fs.WalkDir(o.ws.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // vanished meanwhile, or unreadable: skip it
		}
		if err := o.give(p, c); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("giving %s to uid %d: %w", p, c.Uid, err)
		}
		return nil
	})
}

// give chowns workspace path p (not following a final symlink) to c. A
// file with more than one hard link is left alone, as the file methods
// leave it (singleLink): its other name may be outside the workspace. A
// command cannot make such a link to a file it may not read and write
// where fs.protected_hardlinks is 1 (the default of Linux distributions),
// which keeps a link swapped in between the check and the chown harmless.
func (o Owned) give(p string, c *syscall.Credential) error {
	fi, err := o.ws.Lstat(p)
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && !fi.IsDir() && st.Nlink > 1 {
		return nil
	}
	return o.ws.Lchown(p, int(c.Uid), int(c.Gid))
}

// own chowns p and every directory leading to it inside the workspace.
func (o Owned) own(p string) {
	c := o.opts.Credential
	p = path.Clean(strings.TrimPrefix(p, "/"))
	if c == nil || p == "." || p == "" || strings.HasPrefix(p, "../") || p == ".." {
		return
	}
	parts := strings.Split(p, "/")
	for i := range parts {
		o.give(strings.Join(parts[:i+1], "/"), c) // best effort: a racing command may remove it
	}
}

func (o Owned) WriteFile(ctx context.Context, r contracts.WriteFileRequest) error {
	err := o.Sandbox.WriteFile(ctx, r)
	if err == nil {
		o.own(r.Path)
	}
	return err
}

func (o Owned) EditFile(ctx context.Context, r contracts.EditFileRequest) (contracts.EditFileResult, error) {
	res, err := o.Sandbox.EditFile(ctx, r)
	if err == nil {
		o.own(r.Path)
	}
	return res, err
}

func (o Owned) MakeDir(ctx context.Context, p string) error {
	err := o.Sandbox.MakeDir(ctx, p)
	if err == nil {
		o.own(p)
	}
	return err
}

// Reachable checks that uid:gid may search every directory from / down to
// dir (mode bits; the supplementary groups are cleared): a command's
// working directory is entered after the switch of user.
func Reachable(dir string, uid, gid uint32) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for p := abs; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if !allowed(fi, uid, gid, 0o1) {
			st, _ := fi.Sys().(*syscall.Stat_t)
			return fmt.Errorf("the workspace %s is out of reach of uid %d: %s (mode %v, owner %d:%d) is not searchable by it", abs, uid, p, fi.Mode().Perm(), st.Uid, st.Gid)
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// allowed reports whether uid:gid (no supplementary groups) has perm (0o4
// read, 0o2 write, 0o1 execute or search) on fi by its mode bits.
func allowed(fi fs.FileInfo, uid, gid uint32, perm fs.FileMode) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	switch {
	case st.Uid == uid:
		perm <<= 6
	case st.Gid == gid:
		perm <<= 3
	}
	return fi.Mode().Perm()&perm != 0
}

// lookPathAs resolves a program name without a slash as the commands'
// user c would, in the PATH of env (else this process's): the first
// regular file in a PATH directory it can reach and execute. exec.Command
// would resolve it as this process, root, which may pick a program the
// commands' user cannot run (one under /root: pyenv's shims). Not found,
// name is returned as is and starting it fails as it would have.
func lookPathAs(name string, env []string, c *syscall.Credential) string {
	if strings.Contains(name, "/") {
		return name
	}
	pathVar := os.Getenv("PATH")
	for _, kv := range env { // the last one wins, as in os/exec
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathVar = v
		}
	}
	for _, dir := range filepath.SplitList(pathVar) {
		if !filepath.IsAbs(dir) {
			continue // relative to the workspace, not to this process: left to the shell
		}
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() || !allowed(fi, c.Uid, c.Gid, 0o1) || Reachable(dir, c.Uid, c.Gid) != nil {
			continue
		}
		return p
	}
	return name
}

// Searchable makes every directory above dir searchable by other users
// (adding o+x, never read: nothing becomes listable), so that a command
// run as another user can enter its workspace after the switch of user: a
// data directory of mode 0700 would keep it out. Files in those
// directories keep their own modes (the data directory's are 0600).
func Searchable(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for p := filepath.Dir(abs); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if m := fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky); m&0o001 == 0 {
			if err := os.Chmod(p, m|0o001); err != nil { // the setgid and sticky bits kept
				return fmt.Errorf("letting the commands' user reach its workspace: %w", err)
			}
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}
