package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnrun/cairn/client"
	"github.com/cairnrun/cairn/shared/contracts"
)

// The kill test: a real `cairn dev` process is SIGKILLed in the middle of a
// turn and restarted on the same data directory. The turn must commit, the
// mutating tool's line must be in the file exactly once, and the transcript
// must equal a run without the kill.

var cairnBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cairn-bin-")
	if err != nil {
		panic(err)
	}
	cairnBin = filepath.Join(dir, "cairn")
	out, err := exec.Command("go", "build", "-o", cairnBin, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building cairn: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type devServer struct {
	cmd   *exec.Cmd
	cl    *client.Client
	token string
}

// startDev runs `cairn dev` on data (with extra flags) and waits for its
// listening line.
func startDev(t *testing.T, data string, extra ...string) *devServer {
	t.Helper()
	return startDevEnv(t, data, nil, extra...)
}

// startDevEnv is startDev with more environment variables for cairn dev.
func startDevEnv(t *testing.T, data string, env []string, extra ...string) *devServer {
	t.Helper()
	d, _ := launch(t, data, env, "cairn dev listening on ", "kill-test",
		append([]string{"dev", "--data", data, "--addr", "127.0.0.1:0", "--token", "kill-test"}, extra...)...)
	return d
}

// launch runs the cairn binary with args (stderr into a log file under
// data), waits for the stdout line starting with ready (followed by the
// URL it listens on) and returns a client of it with token and the URL.
func launch(t *testing.T, data string, env []string, ready, token string, args ...string) (*devServer, string) {
	t.Helper()
	cmd := exec.Command(cairnBin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + data}, env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(data, fmt.Sprintf("%s-%d.log", args[0], time.Now().UnixNano())))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); logf.Close() })
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if url, ok := strings.CutPrefix(sc.Text(), ready); ok {
			go func() {
				for sc.Scan() {
				}
			}()
			d := &devServer{cmd: cmd, token: token}
			// A ready line that is no API address (the console's login
			// link) leaves the client to the caller.
			if cl, err := remoteClient(url, token); err == nil {
				d.cl = cl
			}
			return d, url
		}
	}
	t.Fatalf("cairn %s exited before %q (see %s)", args[0], ready, logf.Name())
	return nil, ""
}

func (d *devServer) kill(t *testing.T) {
	t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = d.cmd.Wait()
}

var killSpec = contracts.SessionSpec{
	Model: "scripted:kill@40ms",
	Tools: []contracts.ToolConfig{{Name: "python"}, {Name: "bash", ReadOnly: ptr(true)}},
}

func ptr[T any](v T) *T { return &v }

// waitEvent long-polls until an event satisfying match appears.
func waitEvent(t *testing.T, ctx context.Context, cl *client.Client, sid, sub string, match func(contracts.Event) bool) {
	t.Helper()
	var after int64
	for {
		page, err := cl.Events(ctx, sid, sub, client.EventsOptions{After: after, Wait: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Events {
			if match(e) {
				return
			}
		}
		if page.Done {
			t.Fatalf("submission ended (%s) before the awaited event", page.Phase)
		}
		after = page.Next
	}
}

// waitDone long-polls until the submission is terminal.
func waitDone(t *testing.T, ctx context.Context, cl *client.Client, sid, sub string) contracts.Submission {
	t.Helper()
	var after int64
	for {
		page, err := cl.Events(ctx, sid, sub, client.EventsOptions{After: after, Wait: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if page.Done {
			s, err := cl.Submission(ctx, sid, sub)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		after = page.Next
	}
}

func transcriptOf(t *testing.T, ctx context.Context, cl *client.Client, sid string) []string {
	t.Helper()
	out, err := cl.Transcript(ctx, sid, client.TranscriptOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, n := range out.Items {
		line := string(n.Role)
		for _, b := range n.Blocks {
			switch {
			case b.ToolCall != nil:
				line += " use:" + b.ToolCall.Name + string(b.ToolCall.Input)
			case b.ToolResult != nil:
				line += fmt.Sprintf(" result:%s(err=%v)", b.ToolResult.Content, b.ToolResult.IsError)
			default:
				line += " text:" + b.Text
			}
		}
		lines = append(lines, line)
	}
	return lines
}

func runTurn(t *testing.T, ctx context.Context, d *devServer) (sid, sub string) {
	t.Helper()
	s, err := d.cl.CreateSession(ctx, killSpec)
	if err != nil {
		t.Fatal(err)
	}
	su, err := d.cl.Submit(ctx, s.ID, "append a line and check slowly", client.SubmitOptions{Key: "k-" + s.ID})
	if err != nil {
		t.Fatal(err)
	}
	return s.ID, su.ID
}

func TestKillAndRestart(t *testing.T) {
	ctx := context.Background()

	// reference: the same turn without a kill
	refData := t.TempDir()
	ref := startDev(t, refData)
	rsid, rsub := runTurn(t, ctx, ref)
	if got := waitDone(t, ctx, ref.cl, rsid, rsub); got.Phase != contracts.PhaseCommitted {
		t.Fatalf("reference run: %s %s", got.Phase, got.Error)
	}
	want := transcriptOf(t, ctx, ref.cl, rsid)
	ref.kill(t)

	cases := []struct {
		name string
		at   func(contracts.Event) bool
	}{
		{"during the slow tool", func(e contracts.Event) bool { return e.Type == contracts.EventToolStarted && e.Tool == "bash" }},
		{"during the model stream", func(e contracts.Event) bool { return e.Type == contracts.EventTextDelta && e.Step == 1 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := t.TempDir()
			d := startDev(t, data)
			sid, sub := runTurn(t, ctx, d)
			waitEvent(t, ctx, d.cl, sid, sub, c.at)
			d.kill(t)

			d2 := startDev(t, data)
			got := waitDone(t, ctx, d2.cl, sid, sub)
			if got.Phase != contracts.PhaseCommitted {
				t.Fatalf("after restart: %s %s", got.Phase, got.Error)
			}
			out, err := os.ReadFile(filepath.Join(data, "sandboxes", sid, "out.txt"))
			if err != nil || string(out) != "line\n" {
				t.Fatalf("out.txt = %q, %v; want the line exactly once", out, err)
			}
			if have := transcriptOf(t, ctx, d2.cl, sid); !slices.Equal(have, want) {
				t.Fatalf("transcript differs from the run without a kill:\n%s\n--- want\n%s", strings.Join(have, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}
