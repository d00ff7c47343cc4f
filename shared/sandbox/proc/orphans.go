package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/cairnrun/cairn/shared/contracts"
)

// A pid file, in a session's directory, identifies one sandboxd started
// for it: pidPrefix<pid>pidSuffix holding "<pid> <start time> <boot id>\n"
// (the start time in clock ticks since boot, field 22 of /proc/<pid>/stat).
// A pid alone could name an unrelated process by now; pid, start time and
// boot together name one process only. One file per sandboxd: two racing
// providers each start one for the same session.
const (
	pidPrefix = "sandboxd-"
	pidSuffix = ".pid"
)

func pidPath(dir string, pid int) string {
	return filepath.Join(dir, pidPrefix+strconv.Itoa(pid)+pidSuffix)
}

// ident is what a pid file records.
type ident struct {
	pid   int
	start string
	boot  string
}

func (id ident) String() string { return fmt.Sprintf("%d %s %s\n", id.pid, id.start, id.boot) }

func parseIdent(s string) (ident, bool) {
	f := strings.Fields(s)
	if len(f) != 3 {
		return ident{}, false
	}
	pid, err := strconv.Atoi(f[0])
	return ident{pid: pid, start: f[1], boot: f[2]}, err == nil && pid > 0
}

// writePidFile records the started child in its session's directory.
func writePidFile(dir string, pid int) error {
	id, err := identify(pid)
	if err != nil {
		return err
	}
	path := pidPath(dir, pid)
	if err := os.WriteFile(path+".tmp", []byte(id.String()), 0o600); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// recorded is one pid file found under BaseDir.
type recorded struct {
	session string
	path    string
	id      ident
}

// pidFiles lists every session directory's pid file under BaseDir.
func (p *Provider) pidFiles() ([]recorded, error) {
	ents, err := os.ReadDir(p.cfg.BaseDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []recorded
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		paths, _ := filepath.Glob(filepath.Join(p.cfg.BaseDir, e.Name(), pidPrefix+"*"+pidSuffix))
		for _, path := range paths {
			raw, err := os.ReadFile(path)
			if err != nil {
				continue
			}
			if id, ok := parseIdent(string(raw)); ok {
				out = append(out, recorded{session: e.Name(), path: path, id: id})
			} else {
				os.Remove(path)
			}
		}
	}
	return out, nil
}

// StopAll stops every sandboxd recorded under BaseDir — the ones this
// provider started and the ones an earlier, killed process started — and
// forgets them. A recorded pid is signalled only while it is still the
// process that was recorded (same start time and boot), so a reused pid is
// never touched. The caller must be the only user of BaseDir (the embedded
// backend holds the data directory's lock); session records are left in
// place (the next Acquire finds them dead).
func (p *Provider) StopAll() error {
	p.Close()
	return p.stopFiles(func(recorded) bool { return true })
}

// Reap stops every sandboxd recorded under BaseDir that no session's
// sandbox record names (the loser of a record race whose process died
// before stopping it, a sandboxd whose session was released by a process
// that did not start it): a boot calls it, as the only user of BaseDir.
// Recorded ones are kept: the next Acquire reconnects to them.
func (p *Provider) Reap(ctx context.Context) error {
	defer p.reapScratch(ctx)
	return p.stopFiles(func(r recorded) bool {
		s, err := p.cfg.Sessions.GetSession(ctx, r.session)
		if err != nil {
			return errors.Is(err, contracts.ErrNotFound) // else unsure: keep it
		}
		if s.Sandbox == nil || s.Sandbox.Kind != Kind {
			return true
		}
		pid, _ := parsePID(s.Sandbox.ID)
		return pid != r.id.pid
	})
}

// reapScratch removes the ephemeral workspaces of sandboxds a killed
// process left behind: every one but the recorded sandbox's (its token ref
// names it), which may still be running.
func (p *Provider) reapScratch(ctx context.Context) {
	dirs, _ := filepath.Glob(filepath.Join(p.cfg.BaseDir, "*", scratchPrefix+"*"))
	for _, d := range dirs {
		session := filepath.Base(filepath.Dir(d))
		s, err := p.cfg.Sessions.GetSession(ctx, session)
		if err != nil && !errors.Is(err, contracts.ErrNotFound) {
			continue // unsure: keep it
		}
		if err == nil && s.Sandbox != nil && s.Sandbox.Kind == Kind && scratchPrefix+s.Sandbox.TokenRef == filepath.Base(d) {
			continue
		}
		if err := os.RemoveAll(d); err != nil {
			p.log.Warn("removing an ephemeral workspace left behind", "path", d, "error", err)
		}
	}
}

// stopFiles stops (identity permitting) and forgets every recorded sandboxd
// that stop selects.
func (p *Provider) stopFiles(stop func(recorded) bool) error {
	all, err := p.pidFiles()
	if err != nil {
		return fmt.Errorf("listing sandboxd pid files: %w", err)
	}
	var wg sync.WaitGroup
	for _, r := range all {
		if !stop(r) {
			continue
		}
		wg.Go(func() {
			stopped, err := p.stopForeign(r.id)
			if err != nil {
				p.log.Warn("stopping a recorded sandboxd", "session_id", r.session, "pid", r.id.pid, "error", err)
				return
			}
			if stopped {
				p.log.Info("recorded sandboxd stopped", "session_id", r.session, "pid", r.id.pid)
			}
			os.Remove(r.path)
		})
	}
	wg.Wait()
	return nil
}
