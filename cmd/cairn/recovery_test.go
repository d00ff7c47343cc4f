package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairnrun/cairn/client"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/awstest"
)

// Recovery time after a real SIGKILL (issue 13): on the AWS shape — `cairn
// dev --backend aws` on the endpoint, the harness playing Lambda with the
// deployed timeouts and visibility timeouts (6× the function timeout) —
// a turn killed mid-model or mid-tool is taken up again within a minute of
// the kill: the killed invocation's message was kept hidden only briefly,
// its lease lapses within one TTL, and repair passes every few seconds.
// Embedded, the restarted process resumes the turn at once (boot
// recovery). Recovery is timed by the journal — the first event the
// resumed work writes after the kill (or the restart), by its own clock —
// not by when the rest of the turn finished, which a saturated machine
// stretches. Both are logged (docs/RELIABILITY.md records them).

// Targets of issue 13 (p100).
const (
	awsRecoveryTarget      = time.Minute     // kill → committed, AWS shape
	embeddedRecoveryTarget = 2 * time.Second // restart → committed, embedded (plus the work left)
)

// killAt are the instants a kill lands at.
// left is the work the turn still has to do, by its own nature, once
// resumed: killed mid-tool, the read-only `sleep 2` runs again.
var killAt = []struct {
	name string
	at   func(contracts.Event) bool
	left time.Duration
}{
	{"mid-tool", func(e contracts.Event) bool { return e.Type == contracts.EventToolStarted && e.Tool == "bash" }, 2 * time.Second},
	{"mid-model", func(e contracts.Event) bool { return e.Type == contracts.EventTextDelta && e.Step == 1 }, 0},
}

// startDevAWS runs `cairn dev --backend aws` on the endpoint with the given
// resource names and data directory, and waits for its listening line.
func startDevAWS(t *testing.T, ep, name, data string) *devServer {
	t.Helper()
	d, _ := launch(t, data, nil, "cairn dev (aws backend) listening on ", "kill-test",
		"dev", "--backend", "aws", "--endpoint", ep, "--addr", "127.0.0.1:0", "--data", data,
		"--table", name, "--bucket", name+"-blobs", "--queue-prefix", name, "--token", "kill-test")
	return d
}

func TestKillRecoversWithinAMinuteOnAWS(t *testing.T) {
	ep := awstest.Endpoint(t)
	ctx := context.Background()
	for _, c := range killAt {
		t.Run(c.name, func(t *testing.T) {
			data, name := t.TempDir(), awstest.Name(t, "kill")
			d := startDevAWS(t, ep, name, data)
			sid, sub := runTurn(t, ctx, d)
			waitEvent(t, ctx, d.cl, sid, sub, c.at)
			d.kill(t)
			killed := time.Now()

			d2 := startDevAWS(t, ep, name, data)
			got := waitDone(t, ctx, d2.cl, sid, sub)
			took := time.Since(killed)
			resumed := resumedAfter(t, ctx, d2, sid, sub, killed)
			t.Logf("%s: killed → taken up again in %v (%s), → %s in %v", c.name, resumed.At.Sub(killed).Round(100*time.Millisecond),
				resumed.Type, got.Phase, took.Round(100*time.Millisecond))
			if got.Phase != contracts.PhaseCommitted {
				t.Fatalf("after restart: %s %s", got.Phase, got.Error)
			}
			if r := resumed.At.Sub(killed); r > awsRecoveryTarget {
				t.Fatalf("the turn was taken up again %v after the kill (%s event); the target is %v (lease TTL, message hold, repair passes)", r, resumed.Type, awsRecoveryTarget)
			}
			out, err := os.ReadFile(filepath.Join(data, "sandboxes", sid, "out.txt"))
			if err != nil || string(out) != "line\n" {
				t.Fatalf("out.txt = %q, %v; want the line exactly once", out, err)
			}
		})
	}
}

func TestKillResumesAtOnceEmbedded(t *testing.T) {
	ctx := context.Background()
	for _, c := range killAt {
		t.Run(c.name, func(t *testing.T) {
			data := t.TempDir()
			d := startDev(t, data)
			sid, sub := runTurn(t, ctx, d)
			waitEvent(t, ctx, d.cl, sid, sub, c.at)
			d.kill(t)

			restarted := time.Now()
			d2 := startDev(t, data)
			got := waitDone(t, ctx, d2.cl, sid, sub)
			took := time.Since(restarted)
			resumed := resumedAfter(t, ctx, d2, sid, sub, restarted)
			t.Logf("%s: restart → taken up again in %v (%s), → %s in %v (of which the work left: %v)", c.name,
				resumed.At.Sub(restarted).Round(time.Millisecond), resumed.Type, got.Phase, took.Round(time.Millisecond), c.left)
			if got.Phase != contracts.PhaseCommitted {
				t.Fatalf("after restart: %s %s", got.Phase, got.Error)
			}
			if r := resumed.At.Sub(restarted); r > embeddedRecoveryTarget {
				t.Fatalf("the turn was taken up again %v after the restart (%s event); the target is %v", r, resumed.Type, embeddedRecoveryTarget)
			}
		})
	}
}

// resumedAfter is the turn's first event written after t: the first sign
// of the work a restarted process (or repair) took up again — a repaired
// event, the abandoned attempt's stream_discarded, a tool's end, …
func resumedAfter(t *testing.T, ctx context.Context, d *devServer, sid, sub string, after time.Time) contracts.Event {
	t.Helper()
	for seq := int64(0); ; {
		pg, err := d.cl.Events(ctx, sid, sub, client.EventsOptions{After: seq, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range pg.Events {
			if ev.At.After(after) {
				return ev
			}
		}
		if len(pg.Events) == 0 || pg.Next <= seq {
			t.Fatalf("no event of %s after %v: nothing was taken up again", sub, after)
		}
		seq = pg.Next
	}
}
