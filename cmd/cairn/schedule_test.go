package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
)

// `cairn schedule …` against a real `cairn dev`: create, list, pause
// (addressed by the schedule alone), get, resume, delete, then not found.
func TestScheduleCommands(t *testing.T) {
	data := t.TempDir()
	d := startDev(t, data)
	wf, err := d.cl.CreateWorkflow(context.Background(), "nightly", "result = 1")
	if err != nil {
		t.Fatal(err)
	}
	run := func(want int, args ...string) string {
		t.Helper()
		out, code := cairn(t, append(append([]string{"schedule"}, args...), "--addr", d.cl.BaseURL(), "--token", d.token)...)
		if code != want {
			t.Fatalf("cairn schedule %s: exit %d, want %d:\n%s", strings.Join(args, " "), code, want, out)
		}
		return out
	}
	out := run(0, "create", wf.ID, "rate(1 hour)", "--input", `{"k":1}`)
	id := strings.Fields(out)[0]
	if !strings.HasPrefix(id, "sch_") || !strings.Contains(out, wf.ID) || !strings.Contains(out, "active") {
		t.Fatalf("create printed %q", out)
	}
	for _, args := range [][]string{{"list"}, {"list", wf.ID}} {
		if out := run(0, args...); !strings.Contains(out, id) || !strings.Contains(out, "active") {
			t.Fatalf("schedule %v: %q lacks %s, active", args, out, id)
		}
	}
	if out := run(0, "pause", id); !strings.Contains(out, id) || !strings.Contains(out, "paused") {
		t.Fatalf("pause printed %q", out)
	}
	var got contracts.Schedule
	err = json.Unmarshal([]byte(run(0, "get", wf.ID, id)), &got)
	var in bytes.Buffer
	if err == nil {
		err = json.Compact(&in, got.Input)
	}
	if err != nil || !got.Paused || in.String() != `{"k":1}` {
		t.Fatalf("get: %+v (input %s), %v; want it paused, with its input", got, in.String(), err)
	}
	if out := run(0, "resume", wf.ID, id); !strings.Contains(out, "active") {
		t.Fatalf("resume printed %q", out)
	}
	if out := run(0, "delete", id); !strings.Contains(out, id+" deleted") {
		t.Fatalf("delete printed %q", out)
	}
	if out := run(1, "get", wf.ID, id); !strings.Contains(out, "not_found") {
		t.Fatalf("get after delete: %q", out)
	}
	if out := run(0, "list"); strings.Contains(out, id) {
		t.Fatalf("listed after delete: %q", out)
	}
	if out := run(1, "create", wf.ID, "rate(5 seconds)"); !strings.Contains(out, "invalid") {
		t.Fatalf("create with a bad expression: %q", out)
	}
	if out := run(1, "pause"); !strings.Contains(out, "usage") {
		t.Fatalf("pause without a schedule: %q", out)
	}
}
