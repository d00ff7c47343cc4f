package proc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/placement"
)

func write(t *testing.T, sb contracts.SandboxAPI, path, content string) {
	t.Helper()
	if err := sb.WriteFile(context.Background(), contracts.WriteFileRequest{Path: path, Content: content}); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, sb contracts.SandboxAPI, path string) string {
	t.Helper()
	r, err := sb.ReadFile(context.Background(), contracts.ReadFileRequest{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	return r.Content
}

func acquire(t *testing.T, p *Provider, id string, spec contracts.SandboxSpec) contracts.SandboxAPI {
	t.Helper()
	sb, err := p.Acquire(context.Background(), id, spec)
	if err != nil {
		t.Fatal(err)
	}
	return sb
}

func TestAcquireStartsThenReconnects(t *testing.T) {
	w := newWorld(t, "ses_a")
	p := w.provider()
	sb := acquire(t, p, "ses_a", contracts.SandboxSpec{})
	write(t, sb, "notes.txt", "hello\n")
	rec := w.record("ses_a")
	if rec.Kind != Kind || !strings.HasPrefix(rec.ID, "pid:") || !strings.HasPrefix(rec.Endpoint, "http://127.0.0.1:") ||
		rec.TokenRef == "" || rec.StartedAt.IsZero() {
		t.Fatalf("record %+v", rec)
	}
	if rec.Fingerprint != placement.Fingerprint(contracts.SandboxSpec{Kind: Kind}) {
		t.Errorf("fingerprint of the spec with the kind filled in expected")
	}
	if childOf(p, rec) == nil {
		t.Fatalf("recorded %s is not a child of the provider", rec.ID)
	}

	again := acquire(t, p, "ses_a", contracts.SandboxSpec{Kind: Kind})
	if got := read(t, again, "notes.txt"); got != "hello\n" {
		t.Fatalf("read back %q", got)
	}
	if !placement.Same(w.record("ses_a"), rec) || liveChildren(p) != 1 {
		t.Fatalf("reconnect changed the record (%+v) or started a process (%d children)", w.record("ses_a"), liveChildren(p))
	}

	token := placement.Tokens{Key: testKey}.Mint("ses_a", rec.TokenRef)
	stderr, err := os.ReadFile(filepath.Join(w.base, "ses_a", "sandboxd.log"))
	if err != nil {
		t.Fatal(err)
	}
	if logs := w.logs.String(); !strings.Contains(logs, rec.ID) || strings.Contains(logs, token) || strings.Contains(string(stderr), token) {
		t.Errorf("logs should name the sandbox and never the token:\n%s\nsandboxd:\n%s", logs, stderr)
	}
}

// A new provider instance — another process with the same key and
// journal — reconnects to the recorded sandboxd.
func TestSecondProviderReconnects(t *testing.T) {
	w := newWorld(t, "ses_a")
	p1 := w.provider()
	write(t, acquire(t, p1, "ses_a", contracts.SandboxSpec{}), "a.txt", "from p1")
	rec := w.record("ses_a")

	p2 := w.provider()
	sb := acquire(t, p2, "ses_a", contracts.SandboxSpec{})
	if got := read(t, sb, "a.txt"); got != "from p1" {
		t.Fatalf("read %q", got)
	}
	if !placement.Same(w.record("ses_a"), rec) || liveChildren(p2) != 0 || liveChildren(p1) != 1 {
		t.Fatalf("p2 started its own sandboxd: record %+v, p1 %d, p2 %d children", w.record("ses_a"), liveChildren(p1), liveChildren(p2))
	}
	// p2 did not start it, so p2's Release only clears the record.
	if err := p2.Release(context.Background(), "ses_a"); err != nil {
		t.Fatal(err)
	}
	if s, _ := w.store.GetSession(context.Background(), "ses_a"); s.Sandbox != nil || liveChildren(p1) != 1 {
		t.Fatalf("after p2.Release: record %+v, p1 children %d", s.Sandbox, liveChildren(p1))
	}
}

func TestChangedFingerprintStartsNew(t *testing.T) {
	w := newWorld(t, "ses_a")
	p := w.provider()
	write(t, acquire(t, p, "ses_a", contracts.SandboxSpec{}), "keep.txt", "kept")
	old := w.record("ses_a")
	oldChild := childOf(p, old)

	sb := acquire(t, p, "ses_a", contracts.SandboxSpec{CPU: 512})
	rec := w.record("ses_a")
	if rec.ID == old.ID || rec.Fingerprint == old.Fingerprint || rec.TokenRef == old.TokenRef {
		t.Fatalf("record not replaced: old %+v new %+v", old, rec)
	}
	<-oldChild.done // the old sandboxd was stopped (not just forgotten)
	if liveChildren(p) != 1 {
		t.Fatalf("%d children, want 1", liveChildren(p))
	}
	if got := read(t, sb, "keep.txt"); got != "kept" {
		t.Fatalf("workspace not kept across replacement: %q", got)
	}
}

func TestKilledSandboxIsReplaced(t *testing.T) {
	w := newWorld(t, "ses_a")
	p := w.provider()
	write(t, acquire(t, p, "ses_a", contracts.SandboxSpec{}), "keep.txt", "kept")
	old := w.record("ses_a")
	c := childOf(p, old)
	if err := syscall.Kill(c.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-c.done

	sb := acquire(t, p, "ses_a", contracts.SandboxSpec{})
	rec := w.record("ses_a")
	if rec.ID == old.ID || rec.Endpoint == "" || rec.Fingerprint != old.Fingerprint {
		t.Fatalf("killed sandboxd not replaced: old %+v new %+v", old, rec)
	}
	if got := read(t, sb, "keep.txt"); got != "kept" {
		t.Fatalf("workspace lost: %q", got)
	}
}

func TestConcurrentAcquireStartsOne(t *testing.T) {
	w := newWorld(t, "ses_a")
	p := w.provider()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { _, errs[i] = p.Acquire(context.Background(), "ses_a", contracts.SandboxSpec{}) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := liveChildren(p); n != 1 {
		t.Fatalf("%d sandboxd started for one session", n)
	}
}

// sessionsHook runs before once, before the first UpdateSession.
type sessionsHook struct {
	placement.Sessions
	once   sync.Once
	before func()
}

func (h *sessionsHook) UpdateSession(ctx context.Context, s contracts.Session, expected int64) (contracts.Session, error) {
	h.once.Do(h.before)
	return h.Sessions.UpdateSession(ctx, s, expected)
}

// Two processes place the same session at once: the one whose conditional
// write loses stops its own sandboxd and reconnects to the winner's.
func TestLoserOfRecordRaceReconnects(t *testing.T) {
	w := newWorld(t, "ses_a")
	winner := w.provider()
	hook := &sessionsHook{Sessions: w.store}
	loser := w.provider(func(c *Config) { c.Sessions = hook })
	hook.before = func() {
		// The loser has started its sandboxd and read no record; the
		// winner records its own now.
		write(t, acquire(t, winner, "ses_a", contracts.SandboxSpec{}), "w.txt", "winner")
	}
	sb := acquire(t, loser, "ses_a", contracts.SandboxSpec{})
	if got := read(t, sb, "w.txt"); got != "winner" {
		t.Fatalf("loser reads %q", got)
	}
	if childOf(winner, w.record("ses_a")) == nil {
		t.Fatalf("record %+v is not the winner's", w.record("ses_a"))
	}
	if n := liveChildren(loser); n != 0 {
		t.Fatalf("loser kept %d sandboxd running", n)
	}
}

func TestReleaseAndClose(t *testing.T) {
	w := newWorld(t, "ses_a", "ses_b", "ses_c")
	p := w.provider()
	acquire(t, p, "ses_a", contracts.SandboxSpec{})
	ca := childOf(p, w.record("ses_a"))
	if err := p.Release(context.Background(), "ses_a"); err != nil {
		t.Fatal(err)
	}
	<-ca.done
	if s, _ := w.store.GetSession(context.Background(), "ses_a"); s.Sandbox != nil {
		t.Fatalf("record kept after Release: %+v", s.Sandbox)
	}
	if err := p.Release(context.Background(), "ses_a"); err != nil {
		t.Fatalf("second Release: %v", err)
	}

	acquire(t, p, "ses_b", contracts.SandboxSpec{})
	acquire(t, p, "ses_c", contracts.SandboxSpec{})
	cb, cc := childOf(p, w.record("ses_b")), childOf(p, w.record("ses_c"))
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	<-cb.done
	<-cc.done
	if cb.err != nil || cc.err != nil {
		t.Errorf("sandboxd exit after SIGTERM: %v, %v; want a clean exit", cb.err, cc.err)
	}
	if _, err := p.Acquire(context.Background(), "ses_b", contracts.SandboxSpec{}); !errors.Is(err, contracts.ErrUnavailable) {
		t.Fatalf("Acquire after Close: %v, want ErrUnavailable", err)
	}
}

func TestAcquireRefusesBadInput(t *testing.T) {
	w := newWorld(t, "ses_a")
	p := w.provider()
	for _, tt := range []struct {
		id   string
		spec contracts.SandboxSpec
	}{
		{"ses_a", contracts.SandboxSpec{Kind: "fargate"}},
		{"../escape", contracts.SandboxSpec{}},
		{"", contracts.SandboxSpec{}},
	} {
		if _, err := p.Acquire(context.Background(), tt.id, tt.spec); !errors.Is(err, contracts.ErrInvalid) {
			t.Errorf("Acquire(%q, %+v) = %v, want ErrInvalid", tt.id, tt.spec, err)
		}
	}
	if _, err := p.Acquire(context.Background(), "ses_missing", contracts.SandboxSpec{}); !errors.Is(err, contracts.ErrNotFound) {
		t.Errorf("unknown session: %v, want ErrNotFound", err)
	}
	if _, err := New(Config{Binary: "x", BaseDir: "y", Sessions: w.store, Tokens: placement.Tokens{Key: []byte("short")}}); !errors.Is(err, contracts.ErrInvalid) {
		t.Errorf("short key accepted: %v", err)
	}
}

func TestStartFailureIsReported(t *testing.T) {
	w := newWorld(t, "ses_a")
	p := w.provider(func(c *Config) { c.Binary = "/bin/false" })
	_, err := p.Acquire(context.Background(), "ses_a", contracts.SandboxSpec{})
	if !errors.Is(err, contracts.ErrUnavailable) || !strings.Contains(err.Error(), "sandboxd.log") {
		t.Fatalf("err = %v, want ErrUnavailable naming the log", err)
	}
	if s, _ := w.store.GetSession(context.Background(), "ses_a"); s.Sandbox != nil || liveChildren(p) != 0 {
		t.Fatalf("failed start left record %+v, %d children", s.Sandbox, liveChildren(p))
	}
}

// envChild marks the re-executed test binary of TestChildEnvironment.
const envChild = "SANDBOXPROC_TEST_ENV_CHILD"

// The sandboxd child sees only Config.Env: none of the runtime's AWS_* or
// CAIRN_* variables, even when the runtime process has them. The test
// process environment is never modified: the check runs in a re-executed
// test binary started with those variables set.
func TestChildEnvironment(t *testing.T) {
	if os.Getenv(envChild) != "" {
		childEnvironmentCheck(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildEnvironment$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), envChild+"=1", envBinary+"="+sandboxdBin,
		"AWS_SECRET_ACCESS_KEY=runtime-secret", "AWS_REGION=eu-west-1", "CAIRN_API_KEY=runtime-secret", "OPENAI_API_KEY=runtime-secret")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestChildEnvironment") {
		t.Fatalf("re-executed check: %v\n%s", err, out)
	}
}

func childEnvironmentCheck(t *testing.T) {
	if os.Getenv("AWS_SECRET_ACCESS_KEY") != "runtime-secret" {
		t.Fatal("the re-executed test lacks the runtime's variables: the check would prove nothing")
	}
	w := newWorld(t, "ses_a")
	p := w.provider(func(c *Config) {
		// Even a careless caller's secrets are scrubbed.
		c.Env = []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "AWS_PROFILE=leak", "SANDBOXD_TOKEN_SHA256=forged"}
	})
	acquire(t, p, "ses_a", contracts.SandboxSpec{})
	pid, _ := parsePID(w.record("ses_a").ID)
	raw, err := os.ReadFile("/proc/" + strings.TrimPrefix(w.record("ses_a").ID, "pid:") + "/environ")
	if err != nil {
		t.Skipf("cannot read the environment of pid %d: %v", pid, err)
	}
	vars := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	token := p.cfg.Tokens.Mint("ses_a", w.record("ses_a").TokenRef)
	want := map[string]bool{"PATH=/usr/bin:/bin": false, "LANG=C.UTF-8": false,
		placement.EnvTokenSHA256 + "=" + placement.HashHex(token): false}
	for _, kv := range vars {
		up := strings.ToUpper(kv)
		if strings.HasPrefix(up, "AWS_") || strings.HasPrefix(up, "CAIRN_") || strings.Contains(up, "API_KEY") || strings.Contains(kv, token) {
			t.Errorf("sandboxd environment holds %q", kv)
		}
		if _, ok := want[kv]; ok {
			want[kv] = true
		} else {
			t.Errorf("unexpected variable %q in sandboxd's environment", kv)
		}
	}
	for kv, seen := range want {
		if !seen {
			t.Errorf("sandboxd environment lacks %q", kv)
		}
	}
}
