package sandboxtest

import (
	"bufio"
	"errors"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
)

// raceRounds is how many times each path method is called while the
// swapper runs.
const raceRounds = 200

// swapperScript swaps two workspace entries (argv[1], argv[2]) in a loop
// until the file argv[3] exists: with renameat2(RENAME_EXCHANGE), atomic,
// where the machine has it (x86-64, arm64), else with three renames. It
// prints its mode after a first swap, and, when it stops, the number of
// swaps made since.
const swapperScript = `
import ctypes, os, platform, sys
a, b, stop = sys.argv[1:4]
libc = ctypes.CDLL(None, use_errno=True)
nr = {"x86_64": 316, "aarch64": 276}.get(platform.machine())
def exchange():
    if nr is None:
        return False
    return libc.syscall(ctypes.c_long(nr), ctypes.c_long(-100), ctypes.c_char_p(a.encode()),
                        ctypes.c_long(-100), ctypes.c_char_p(b.encode()), ctypes.c_long(2)) == 0
atomic = exchange() and exchange()
tmp = a + ".swap"
def swap():
    if atomic:
        exchange()
    else:
        os.rename(a, tmp); os.rename(b, a); os.rename(tmp, b)
swap()
print("exchange" if atomic else "rename", flush=True)
n = 0
while not os.path.exists(stop):
    swap(); n += 1
print(n, flush=True)
`

// swapper runs swapperScript on host paths a and b. stop ends it
// deterministically (a stop file, then waiting for the process) and returns
// how many swaps it made; it is also registered as a cleanup.
func swapper(t *testing.T, a, b string) (mode string, stop func() int) {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is needed to swap directories concurrently")
	}
	stopFile := filepath.Join(t.TempDir(), "stop")
	cmd := exec.Command(python, "-c", swapperScript, a, b, stopFile)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	noErr(t, "swapper pipe", err)
	noErr(t, "start swapper", cmd.Start())
	lines := bufio.NewScanner(out)
	stopped, swaps := false, -1
	stop = func() int {
		if stopped {
			return swaps
		}
		stopped = true
		if err := os.WriteFile(stopFile, nil, 0o644); err != nil {
			cmd.Process.Kill()
		}
		if lines.Scan() {
			swaps, _ = strconv.Atoi(lines.Text())
		}
		if err := cmd.Wait(); err != nil {
			t.Errorf("swapper: %v", err)
		}
		return swaps
	}
	t.Cleanup(func() { stop() })
	if !lines.Scan() { // the first swap is done
		stop()
		t.Fatalf("swapper did not start: %v", lines.Err())
	}
	return lines.Text(), stop
}

// snapshot records every entry below dir: its kind and, for files, content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.IsDir():
			got[rel] = "<dir>"
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			got[rel] = string(b)
		default:
			got[rel] = d.Type().String()
		}
		return nil
	})
	noErr(t, "snapshot "+dir, err)
	return got
}

// testPathRace: a process swaps workspace directory "d" with "dl", a symlink
// to a directory outside, in a loop, while every path method is called on
// paths under "d". Whatever the interleaving, nothing outside is created,
// changed or removed, and no outside content or name is returned.
func testPathRace(t *testing.T, s *suite) {
	outside := t.TempDir()
	for name, content := range map[string]string{
		"f.txt": "SECRET-OUTSIDE\n", "only-outside.txt": "SECRET-OUTSIDE\n",
		"victim.txt": "SECRET-OUTSIDE\n", "victimdir/v.txt": "SECRET-OUTSIDE\n",
	} {
		p := filepath.Join(outside, filepath.FromSlash(name))
		noErr(t, "mkdir outside", os.MkdirAll(filepath.Dir(p), 0o755))
		noErr(t, "write outside", os.WriteFile(p, []byte(content), 0o644))
	}
	before := snapshot(t, outside)
	s.put(t, "d/f.txt", "inside\n")
	s.symlink(t, outside, "dl")

	leaked := func(text string) bool {
		return strings.Contains(text, "SECRET") || strings.Contains(text, "only-outside") || strings.Contains(text, "victim")
	}
	var seen struct{ ok, denied int }
	// check accepts success or a contract error; anything else (a host
	// error, a leak) fails.
	check := func(what string, err error) {
		t.Helper()
		switch {
		case err == nil:
			seen.ok++
		case errors.Is(err, contracts.ErrPermission):
			seen.denied++
		case errors.Is(err, contracts.ErrNotFound), errors.Is(err, contracts.ErrInvalid), errors.Is(err, contracts.ErrExists):
		default:
			t.Errorf("%s: unexpected error %v", what, err)
		}
		if err != nil && strings.Contains(err.Error(), "SECRET") {
			t.Errorf("%s: error reveals the outside: %v", what, err)
		}
	}

	mode, stop := swapper(t, s.host("d"), s.host("dl"))
	for i := 0; i < raceRounds && !t.Failed(); i++ {
		got, err := s.api.ReadFile(s.ctx, contracts.ReadFileRequest{Path: "d/f.txt"})
		check("ReadFile", err)
		if leaked(got.Content) {
			t.Errorf("ReadFile d/f.txt returned outside content %q", got.Content)
		}
		fi, err := s.api.Stat(s.ctx, "d/only-outside.txt")
		if err == nil {
			t.Errorf("Stat reached the outside: %+v", fi)
		}
		check("Stat", err)
		// Each method once a round; the variants take turns.
		writes := []contracts.WriteFileRequest{
			{Path: "d/f.txt", Content: "inside\n"},     // overwrite
			{Path: "d/new.txt", Content: "pwned"},      // create
			{Path: "d/sub/deep.txt", Content: "pwned"}, // create parents
			{Path: "d/app.txt", Content: "x", Append: true},
		}
		check("WriteFile", s.api.WriteFile(s.ctx, writes[i%len(writes)]))
		_, err = s.api.EditFile(s.ctx, contracts.EditFileRequest{Path: "d/f.txt", Old: "SECRET", New: "PWNED"})
		check("EditFile", err)
		check("MakeDir", s.api.MakeDir(s.ctx, "d/newdir/deeper"))
		if i%2 == 0 {
			check("Remove", s.api.Remove(s.ctx, "d/victim.txt", false))
		} else {
			check("Remove recursive", s.api.Remove(s.ctx, "d/victimdir", true))
		}
		list, err := s.api.ListDir(s.ctx, "d")
		check("ListDir", err)
		for _, e := range list {
			if leaked(e.Path) {
				t.Errorf("ListDir d revealed %q", e.Path)
			}
		}
		pattern := []string{"d/*", "**"}[i%2]
		names, err := s.api.Glob(s.ctx, pattern)
		check("Glob "+pattern, err)
		for _, n := range names {
			if leaked(n) {
				t.Errorf("Glob %s revealed %q", pattern, n)
			}
		}
		dir := []string{"d", ""}[i%2]
		res, err := s.api.Grep(s.ctx, contracts.GrepRequest{Pattern: "SECRET|pwned", Path: dir})
		check("Grep "+dir, err)
		for _, m := range res.Matches {
			if leaked(m.Path) || leaked(m.Text) {
				t.Errorf("Grep in %q revealed %+v", dir, m)
			}
		}
	}
	swaps := stop()
	t.Logf("swapper (%s) made %d swaps; calls: %d succeeded, %d refused as escapes", mode, swaps, seen.ok, seen.denied)
	if swaps < 1 {
		t.Errorf("the swapper made no swaps while the calls ran (%d): the race was not exercised", swaps)
	}
	if after := snapshot(t, outside); !maps.Equal(before, after) {
		t.Errorf("outside directory changed:\nbefore %q\nafter  %q", before, after)
	}
}

// testHardLinks: a regular file with more than one link (one made from a
// file outside the workspace, the way a same-user command can) is neither
// read, written, edited nor grepped; it can still be removed, which removes
// the link only.
func testHardLinks(t *testing.T, s *suite) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	noErr(t, "write outside", os.WriteFile(secret, []byte("SECRET-OUTSIDE\n"), 0o644))
	s.mkdir(t, "sub")
	for _, rel := range []string{"hl.txt", "sub/hl.txt"} {
		if err := os.Link(secret, s.host(rel)); err != nil {
			t.Skipf("hard link across directories: %v", err)
		}
	}
	s.put(t, "plain.txt", "SECRET-INSIDE\n")

	for _, p := range []string{"hl.txt", "sub/hl.txt"} {
		got, err := s.api.ReadFile(s.ctx, contracts.ReadFileRequest{Path: p})
		wantErr(t, "ReadFile "+p, err, contracts.ErrPermission)
		if strings.Contains(got.Content, "OUTSIDE") {
			t.Errorf("ReadFile %s returned %q", p, got.Content)
		}
		wantErr(t, "WriteFile "+p, s.api.WriteFile(s.ctx, contracts.WriteFileRequest{Path: p, Content: "pwned"}), contracts.ErrPermission)
		wantErr(t, "WriteFile append "+p, s.api.WriteFile(s.ctx, contracts.WriteFileRequest{Path: p, Content: "pwned", Append: true}), contracts.ErrPermission)
		_, err = s.api.EditFile(s.ctx, contracts.EditFileRequest{Path: p, Old: "SECRET", New: "PWNED"})
		wantErr(t, "EditFile "+p, err, contracts.ErrPermission)
		_, err = s.api.Grep(s.ctx, contracts.GrepRequest{Pattern: "SECRET", Path: p})
		wantErr(t, "Grep "+p, err, contracts.ErrPermission)
	}
	res, err := s.api.Grep(s.ctx, contracts.GrepRequest{Pattern: "SECRET"})
	noErr(t, "Grep all", err)
	if len(res.Matches) != 1 || res.Matches[0].Path != "plain.txt" {
		t.Errorf("Grep all = %+v, want only plain.txt (hard links skipped)", res.Matches)
	}
	// Two links inside the workspace are refused alike: a link cannot tell
	// where its other names are.
	noErr(t, "link inside", os.Link(s.host("plain.txt"), s.host("twin.txt")))
	_, err = s.api.ReadFile(s.ctx, contracts.ReadFileRequest{Path: "twin.txt"})
	wantErr(t, "ReadFile twin.txt", err, contracts.ErrPermission)

	noErr(t, "Remove hl.txt", s.api.Remove(s.ctx, "hl.txt", false))
	noErr(t, "Remove sub", s.api.Remove(s.ctx, "sub", true))
	if b, err := os.ReadFile(secret); err != nil || string(b) != "SECRET-OUTSIDE\n" {
		t.Errorf("outside file after removing its links: %q, %v", b, err)
	}
	// Once the file has a single link again it is an ordinary file.
	noErr(t, "Remove twin.txt", s.api.Remove(s.ctx, "twin.txt", false))
	got, err := s.api.ReadFile(s.ctx, contracts.ReadFileRequest{Path: "plain.txt"})
	noErr(t, "ReadFile plain.txt", err)
	if got.Content != "SECRET-INSIDE\n" {
		t.Errorf("ReadFile plain.txt = %q", got.Content)
	}
}
