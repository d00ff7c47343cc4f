package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
)

// `cairn dev` run as root: the commands of local sandboxes run as nobody
// (CAIRN_SANDBOX_RUN_AS unset) and reach none of the runtime's files in
// DATA — the journal, the sandbox key, the API tokens, the log, the lock —
// nor the call ledger, and cannot list DATA or forge a record.
func TestDevLocalSandboxAsRootKeepsDataOutOfReach(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: cairn dev runs local commands as another user only as root (CI runs as root)")
	}
	ctx := context.Background()
	data := filepath.Join(t.TempDir(), "data") // created by cairn: 0700 (t.TempDir's own are 0755)
	// cairn run writes DATA/cairn.log; cairn dev DATA/token and tokens.json;
	// both the journal and DATA/sandbox.key.
	if out, code := cairn(t, "run", "--data", data, "--model", "scripted:shell", "true"); code != 0 {
		t.Fatalf("cairn run: exit %d:\n%s", code, out)
	}
	d := startDev(t, data)
	files := []string{"cairn.db", "cairn.db-wal", "cairn.db-shm", "sandbox.key", "tokens.json", "token", "cairn.log", "cairn.lock"}
	for _, f := range []string{"cairn.db", "sandbox.key", "tokens.json", "token", "cairn.log"} {
		if _, err := os.Stat(filepath.Join(data, f)); err != nil {
			t.Fatalf("DATA/%s: %v (the check below would prove nothing)", f, err)
		}
	}
	s, err := d.cl.CreateSession(ctx, contracts.SessionSpec{Model: "scripted:shell"})
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(data, "sandboxes", ".state")
	probe := "id -u; echo mine > mine.txt && echo WROTE\n"
	for _, f := range files {
		probe += "cat " + filepath.Join(data, f) + " >/dev/null 2>&1 && echo READ:" + f + "\n"
	}
	probe += "ls " + data + " >/dev/null 2>&1 && echo LISTED_DATA\n" +
		"ls " + filepath.Join(data, "sandboxes") + " >/dev/null 2>&1 && echo LISTED_SESSIONS\n" +
		"ls " + state + " >/dev/null 2>&1 && echo LISTED_LEDGER\n" +
		"echo '{}' > " + filepath.Join(state, s.ID, "calls", "forged.json") + " 2>/dev/null && echo FORGED\ntrue"
	_, tr := shellTurn(t, ctx, d, s.ID, probe)
	last := tr[len(tr)-2] // the tool result
	if !strings.Contains(last, "result:65534\n") || !strings.Contains(last, "WROTE") {
		t.Fatalf("the command did not run as nobody in its workspace: %s", last)
	}
	for _, bad := range []string{"READ:", "LISTED_", "FORGED"} {
		if strings.Contains(last, bad) {
			t.Errorf("a sandboxed command reached the runtime's files (%s): %s", bad, last)
		}
	}
	if _, err := os.Stat(filepath.Join(state, s.ID, "calls", "forged.json")); !os.IsNotExist(err) {
		t.Errorf("a forged ledger record exists: %v", err)
	}
}

// CAIRN_SANDBOX_RUN_AS=self keeps local commands as the runtime's user
// (root here).
func TestDevSandboxRunAsSetting(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: as another user, self is the only choice (CI runs as root)")
	}
	ctx := context.Background()
	d := startDevEnv(t, t.TempDir(), []string{"CAIRN_SANDBOX_RUN_AS=self"})
	s, err := d.cl.CreateSession(ctx, contracts.SessionSpec{Model: "scripted:shell"})
	if err != nil {
		t.Fatal(err)
	}
	if _, tr := shellTurn(t, ctx, d, s.ID, "id -u"); !strings.Contains(tr[len(tr)-2], "result:0\n") {
		t.Errorf("self: %s, want uid 0", tr[len(tr)-2])
	}
}

// A malformed CAIRN_SANDBOX_RUN_AS, or another user without root, refuses
// to start, naming the variable.
func TestSandboxRunAsRefused(t *testing.T) {
	bad := []string{"nobody"}
	if os.Geteuid() != 0 {
		bad = append(bad, "65534:65534")
	}
	for _, v := range bad {
		cmd := exec.Command(cairnBin, "run", "--data", t.TempDir(), "--model", "scripted:shell", "true")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "CAIRN_SANDBOX_RUN_AS=" + v}
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "CAIRN_SANDBOX_RUN_AS") {
			t.Errorf("CAIRN_SANDBOX_RUN_AS=%s: %v\n%s; want a refusal naming the variable", v, err, out)
		}
	}
}
