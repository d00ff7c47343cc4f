package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnrun/cairn/client"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/model/scripted"
	"github.com/cairnrun/cairn/shared/testkit/enginetest"
	"github.com/cairnrun/cairn/shared/turn"
)

// cutStep breaks the first stream of model call number at (0-based) after a
// flushed batch of text, as a crash or a reset connection would, then plays
// the scripted model.
type cutStep struct {
	inner *scripted.Client
	at    int
	calls int
}

func (c *cutStep) Stream(ctx context.Context, req contracts.ModelRequest, emit func(contracts.ModelEvent) error) (contracts.ModelResponse, error) {
	c.calls++
	if c.calls-1 != c.at {
		return c.inner.Stream(ctx, req, emit)
	}
	for range turn.FlushChunks { // the manual clock never moves: only the count flushes
		_ = emit(contracts.ModelEvent{Type: contracts.ModelText, Text: "half an ans "})
	}
	return contracts.ModelResponse{}, errors.New("connection reset")
}

// stepLines returns the "[step N] …" lines of out.
func stepLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "[step ") {
			lines = append(lines, l)
		}
	}
	return lines
}

// `cairn run`'s rendering of a turn whose step-2 stream broke after output:
// every step's text is printed once and equals what the step recorded.
func TestRunPrintsEachStepsFinalTextOnce(t *testing.T) {
	res := enginetest.ModelTurn(t, &cutStep{inner: scripted.New(), at: 1}, "demo", "do the demo")
	if res.Sub.Phase != contracts.PhaseCommitted || res.Failures != 1 {
		t.Fatalf("phase %s after %d failures", res.Sub.Phase, res.Failures)
	}
	h := res.Harness
	var buf bytes.Buffer
	cl, err := client.New("", client.WithHandler(h.RT.API))
	if err != nil {
		t.Fatal(err)
	}
	if err := follow(context.Background(), cl, &buf, res.Sub.SessionID, res.Sub.ID, contracts.Deny, nil); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	var want []string
	for _, line := range res.Transcript {
		if text, ok := strings.CutPrefix(line, "assistant: text="); ok {
			text, _, _ = strings.Cut(text, " use=")
			want = append(want, fmt.Sprintf("[step %d] %s", len(want)+1, text))
		}
	}
	if got := stepLines(out); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("printed steps:\n%s\nwant (the transcript):\n%s\nwhole output:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), out)
	}
	if strings.Contains(out, "half an ans") {
		t.Fatalf("the discarded attempt's text was printed:\n%s", out)
	}
	if !strings.HasSuffix(out, fmt.Sprintf("[step 4] %s\ncommitted %s in 4 steps\n", res.Sub.Result, res.Sub.ID)) {
		t.Fatalf("the output does not end with the committed answer:\n%s", out)
	}
}

// The printer drops a discarded attempt's text, including text a zombie
// holder of that attempt writes after the discard, and ends every call once.
func TestPrinterDropsDiscardedAttempts(t *testing.T) {
	evs := []contracts.Event{
		{Type: contracts.EventStep, Step: 0},
		{Type: contracts.EventTextDelta, Step: 0, Attempt: 1, Text: "I'll wr"},
		{Type: contracts.EventStreamDiscarded, Step: 0, Attempt: 1},
		{Type: contracts.EventTextDelta, Step: 0, Attempt: 2, Text: "I'll write "},
		{Type: contracts.EventTextDelta, Step: 0, Attempt: 1, Text: "ite a note (zombie)"},
		{Type: contracts.EventTextDelta, Step: 0, Attempt: 2, Text: "a note."},
		{Type: contracts.EventToolStarted, Step: 0, Tool: "bash", Text: `{"command":"true"}`},
		{Type: contracts.EventToolInterrupted, Step: 0, Tool: "bash", Text: turn.Interrupted, IsError: true},
		{Type: contracts.EventToolDenied, Step: 0, Tool: "python", Text: "denied: by policy", IsError: true},
		{Type: contracts.EventStep, Step: 1},
		{Type: contracts.EventTextDelta, Step: 1, Attempt: 1, Text: "Done."},
		{Type: contracts.EventCommitted, Step: 1, Text: "Done."},
	}
	var buf bytes.Buffer
	p := newPrinter(&buf)
	for _, ev := range evs {
		p.print(ev)
	}
	p.flush()
	want := "[step 1] I'll write a note.\n" +
		"  → bash {\"command\":\"true\"}\n" +
		"  ✗ bash: " + short(turn.Interrupted, 100) + "\n" +
		"  ✗ python: denied: by policy\n" +
		"[step 2] Done.\n"
	if buf.String() != want {
		t.Fatalf("printed:\n%s\nwant:\n%s", buf.String(), want)
	}
}

func TestHelpExitsZero(t *testing.T) {
	cases := []struct {
		args []string
		ok   bool
		want string
	}{
		{[]string{"dev", "--help"}, true, "-addr"},
		{[]string{"dev", "-h"}, true, "-addr"},
		{[]string{"--help"}, true, "usage:"},
		{[]string{"-h"}, true, "usage:"},
		{[]string{"run", "--help"}, true, "-model"},
		{[]string{"run", "-h"}, true, "-model"},
		{[]string{"dev", "--no-such-flag"}, false, "flag provided but not defined"},
		{[]string{"run", "--no-such-flag", "hi"}, false, "flag provided but not defined"},
	}
	for _, c := range cases {
		out, code := cairn(t, c.args...)
		if (code == 0) != c.ok || !strings.Contains(out, c.want) {
			t.Errorf("cairn %v: exit %d, output %q; want success=%v and %q", c.args, code, out, c.ok, c.want)
		}
	}
}

// watched collects a process's output and lets a test wait for text in it.
type watched struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newWatched() *watched { return &watched{changed: make(chan struct{})} }

func (w *watched) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	close(w.changed)
	w.changed = make(chan struct{})
	return len(p), nil
}

func (w *watched) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// await waits until the output matches re (returning the match) or exited
// closes.
func (w *watched) await(t *testing.T, re *regexp.Regexp, exited <-chan struct{}) []string {
	t.Helper()
	for {
		w.mu.Lock()
		m, ch := re.FindStringSubmatch(w.buf.String()), w.changed
		w.mu.Unlock()
		if m != nil {
			return m
		}
		select {
		case <-ch:
		case <-exited:
			if m := re.FindStringSubmatch(w.String()); m != nil {
				return m
			}
			t.Fatalf("cairn run exited before printing %q:\n%s", re, w.String())
		case <-time.After(2 * time.Minute): // a hang, not a synchronisation
			t.Fatalf("no %q in cairn run's output after 2 minutes:\n%s", re, w.String())
		}
	}
}

// startDevOn runs `cairn dev` on data, listening on addr with token, and
// returns it and the address it listens on.
func startDevOn(t *testing.T, data, addr, token string) (*devServer, string) {
	t.Helper()
	d, url := launch(t, data, nil, "cairn dev listening on ", token, "dev", "--data", data, "--addr", addr, "--token", token)
	return d, strings.TrimPrefix(url, "http://")
}

// `cairn run` follows a turn across a restart of the server: the server is
// SIGKILLed while a tool call waits for a file the test writes, and
// restarted on the same address with a new token. cairn run says so in one
// line, re-reads DATA/token, resumes after the last event it saw, and the
// turn commits.
func TestRunSurvivesServerRestart(t *testing.T) {
	data := t.TempDir()
	d1, addr := startDevOn(t, data, "127.0.0.1:0", "token-before")
	out := newWatched()
	run := exec.Command(cairnBin, "run", "--addr", "http://"+addr, "--data", data, "--model", "scripted:shell",
		"until [ -e release ]; do sleep 0.05; done; echo released")
	run.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	run.Stdout, run.Stderr = out, out
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var runErr error
	go func() { runErr = run.Wait(); close(exited) }()
	t.Cleanup(func() { _ = run.Process.Kill(); <-exited })

	sid := out.await(t, regexp.MustCompile(`session (ses_\w+) · submission sub_\w+\n`), exited)[1]
	out.await(t, regexp.MustCompile(`→ bash `), exited) // the call runs, and waits for us
	release := filepath.Join(data, "sandboxes", sid, "release")
	t.Cleanup(func() { _ = os.WriteFile(release, nil, 0o600) }) // an orphaned command ends
	d1.kill(t)
	out.await(t, regexp.MustCompile(`lost the server \([^)]*\); reconnecting… `), exited)

	d2, _ := startDevOn(t, data, addr, "token-after")
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	<-exited
	text := out.String()
	t.Logf("cairn run's output:\n%s", text)
	if runErr != nil {
		t.Fatalf("cairn run: %v:\n%s", runErr, text)
	}
	m := regexp.MustCompile(`(?m)^committed (sub_\w+) in 2 steps$`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no committed line:\n%s", text)
	}
	if n := strings.Count(text, "reconnect"); n != 2 || !regexp.MustCompile(`(?m)^  ↻ lost the server \([^)]*\); reconnecting… reconnected after [0-9.]+m?s, resuming after event [1-9][0-9]*$`).MatchString(text) {
		t.Fatalf("want one line saying it reconnected and where it resumed:\n%s", text)
	}
	if strings.Contains(text, "reading events") || strings.Contains(text, "cairn:") {
		t.Fatalf("an error was printed:\n%s", text)
	}
	sub, err := d2.cl.Submission(context.Background(), sid, m[1])
	if err != nil {
		t.Fatal(err)
	}
	if sub.Phase != contracts.PhaseCommitted {
		t.Fatalf("phase %s", sub.Phase)
	}
	if got := stepLines(text); len(got) != 2 || got[1] != "[step 2] "+sub.Result {
		t.Fatalf("step lines %q; want two, the last with the committed answer %q:\n%s", got, sub.Result, text)
	}
}
