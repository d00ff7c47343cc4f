package proc

import (
	"fmt"
	"os"
	"path/filepath"
)

// searchable makes every directory above dir searchable by other users
// (adding o+x, never read: nothing becomes listable). Run as root, sandboxd
// runs commands as an unprivileged user (server.EnvRunAs, nobody by
// default), which enters its workspace after the switch of user; a data
// directory of mode 0700 would keep it out. Files in those directories
// keep their own modes (the data directory's are 0600).
func searchable(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for p := filepath.Dir(abs); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if m := fi.Mode().Perm(); m&0o001 == 0 {
			if err := os.Chmod(p, m|0o001); err != nil {
				return fmt.Errorf("letting the commands' user reach its workspace: %w", err)
			}
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}
