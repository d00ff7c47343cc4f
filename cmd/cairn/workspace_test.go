package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cairnrun/cairn/shared/contracts"
)

// A process sandbox with workspace "ephemeral" loses its directory with
// its sandboxd, as a Fargate task loses its disk: the workspace lives on in
// snapshots (in cairn.db's blob table here, in S3 on AWS). The first turn
// writes files; its sandboxd is SIGKILLed between turns; the next turn runs
// in a new sandboxd whose workspace was restored from the snapshot, and its
// first tool result tells the model so — once.
func TestDevEphemeralWorkspaceIsRestoredFromItsSnapshot(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	d := startDev(t, data, "--sandbox", "process")
	s, err := d.cl.CreateSession(ctx, contracts.SessionSpec{Model: "scripted:shell",
		Sandbox: contracts.SandboxSpec{Kind: "process", Workspace: contracts.WorkspaceEphemeral}})
	if err != nil {
		t.Fatal(err)
	}
	_, tr := shellTurn(t, ctx, d, s.ID, `mkdir -p notes && echo kept > notes/kept.txt && printf '#!/bin/sh\necho ran\n' > tool.sh && chmod 755 tool.sh && ln -s notes/kept.txt link`)
	if res := tr[len(tr)-2]; strings.Contains(res, "cairn:") {
		t.Fatalf("the first sandbox of a session has nothing to say about its workspace: %s", res)
	}
	first := sandboxRecord(t, ctx, d, s.ID)
	if first.Workspace == nil || first.Workspace.Snapshot == nil || first.Workspace.Snapshot.Files != 2 {
		t.Fatalf("no snapshot of the workspace after a mutating step: %+v", first.Workspace)
	}
	scratch := filepath.Join(data, "sandboxd", s.ID, "workspace-"+first.TokenRef)
	if _, err := os.Stat(filepath.Join(scratch, "notes", "kept.txt")); err != nil {
		t.Fatalf("the ephemeral workspace is not where the record says: %v", err)
	}

	pid, err := strconv.Atoi(strings.TrimPrefix(first.ID, "pid:"))
	if err != nil {
		t.Fatal(err)
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pidfd)
	if err := unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0); err != nil {
		t.Fatal(err)
	}
	if !exitedBy(t, pidfd) {
		t.Fatal("sandboxd outlived SIGKILL")
	}

	_, tr = shellTurn(t, ctx, d, s.ID, "cat notes/kept.txt; ./tool.sh; cat link")
	res := tr[len(tr)-2]
	at := first.Workspace.Snapshot.At.UTC().Format("2006-01-02T15:04:05Z07:00")
	if !strings.Contains(res, "workspace was restored from the snapshot taken at "+at) || !strings.Contains(res, "result:") {
		t.Fatalf("the first result on the new sandbox does not carry the restore notice: %s", res)
	}
	if !strings.Contains(res, "kept\nran\nkept") {
		t.Fatalf("the restored workspace lacks the first turn's files: %s", res)
	}
	second := sandboxRecord(t, ctx, d, s.ID)
	if second.ID == first.ID || second.Workspace == nil || second.Workspace.Notice != "" {
		t.Fatalf("the new sandbox's record: %+v (first %s)", second, first.ID)
	}
	if _, err := os.Stat(scratch); !os.IsNotExist(err) {
		t.Fatalf("the dead sandboxd's ephemeral workspace is still there: %v", err)
	}

	_, tr = shellTurn(t, ctx, d, s.ID, "cat notes/kept.txt")
	if res := tr[len(tr)-2]; strings.Contains(res, "cairn:") || !strings.Contains(res, "kept") {
		t.Fatalf("the notice is said once; the third turn: %s", res)
	}
}
