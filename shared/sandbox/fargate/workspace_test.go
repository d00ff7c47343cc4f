package fargate_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecs"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/fargate"
	"github.com/cairnrun/cairn/shared/sandbox/snapshot"
)

// A task idles out (ECS stops it, its disk is gone): the replacement task
// is restored from the session's latest snapshot before it is recorded,
// over the same protocol and token as every call, and says so once.
func TestStoppedTaskWorkspaceIsRestored(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, "ses_a")
	snaps := &snapshot.Store{Blobs: h.store}
	p, _ := h.provider(func(c *fargate.Config) { c.Snapshots = snaps })
	sb := acquire(t, p, "ses_a", contracts.SandboxSpec{})
	dw, ok := sb.(contracts.DurableWorkspace)
	if !ok {
		t.Fatalf("a fargate sandbox with snapshots is %T, not a durable workspace", sb)
	}
	if dw.WorkspaceNotice() != "" {
		t.Fatalf("a first task has a notice: %q", dw.WorkspaceNotice())
	}
	write(t, sb, "src/notes.txt", "kept across tasks")
	if err := dw.SaveWorkspace(ctx); err != nil {
		t.Fatal(err)
	}
	old := h.record("ses_a")
	if old.Workspace == nil || old.Workspace.Snapshot == nil || old.Workspace.Snapshot.Files != 1 {
		t.Fatalf("record after the snapshot: %+v", old.Workspace)
	}
	if _, err := h.env.client.StopTask(ctx, &ecs.StopTaskInput{Cluster: aws.String(h.env.cluster), Task: aws.String(old.ID)}); err != nil {
		t.Fatal(err)
	}
	h.world.stopped(old.ID)

	sb2 := acquire(t, p, "ses_a", contracts.SandboxSpec{})
	rec := h.record("ses_a")
	if rec.ID == old.ID || rec.Workspace == nil || rec.Workspace.Snapshot.ID != old.Workspace.Snapshot.ID {
		t.Fatalf("the new task's record %+v", rec)
	}
	if got := read(t, sb2, "src/notes.txt"); got != "kept across tasks" {
		t.Fatalf("restored file %q", got)
	}
	dw2 := sb2.(contracts.DurableWorkspace)
	if n := dw2.WorkspaceNotice(); !strings.Contains(n, "restored from the snapshot taken at") || n != rec.Workspace.Notice {
		t.Fatalf("notice %q (record %q)", n, rec.Workspace.Notice)
	}
	if err := dw2.NoticeGiven(ctx); err != nil {
		t.Fatal(err)
	}
	// Another process reconnecting to the task has nothing more to say.
	p2, _ := h.provider(func(c *fargate.Config) { c.Snapshots = snaps })
	if n := acquire(t, p2, "ses_a", contracts.SandboxSpec{}).(contracts.DurableWorkspace).WorkspaceNotice(); n != "" {
		t.Fatalf("the notice was repeated: %q", n)
	}
}
