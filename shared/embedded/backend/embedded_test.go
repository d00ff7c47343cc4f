package backend_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/embedded/backend"
	"github.com/cairnrun/cairn/shared/tools"
)

func open(t *testing.T, dir string) (*assemble.Runtime, error) {
	t.Helper()
	return backend.New(context.Background(), backend.Config{DataDir: dir, Env: []string{"PATH=" + os.Getenv("PATH")}})
}

func mustOpen(t *testing.T, dir string) *assemble.Runtime {
	t.Helper()
	rt, err := open(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

func TestNewRequiresDataDir(t *testing.T) {
	if _, err := backend.New(context.Background(), backend.Config{}); err == nil {
		t.Fatal("New without DataDir succeeded")
	}
}

func TestDataDirLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	first := mustOpen(t, dir)
	if _, err := os.Stat(filepath.Join(dir, "cairn.db")); err != nil {
		t.Fatalf("database not created: %v", err)
	}

	for range 2 { // a refused open must not disturb the lock either
		second, err := open(t, dir)
		if err == nil {
			second.Close()
			t.Fatal("second New on an open data dir succeeded")
		}
		if !strings.Contains(err.Error(), "in use") {
			t.Fatalf("error %q does not say the dir is in use", err)
		}
	}

	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again := mustOpen(t, dir)
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
}

// A previous process died holding a lease and an in-flight message: the
// next boot breaks the lease, releases the message and finishes the turn.
func TestBootRecovery(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()

	rt := mustOpen(t, dir)
	var cfgs []contracts.ToolConfig
	for _, d := range tools.NewRegistry().Definitions() {
		cfgs = append(cfgs, contracts.ToolConfig{Name: d.Name})
	}
	sess, err := rt.Engine.CreateSession(ctx, "test", contracts.SessionSpec{Model: "scripted:plain", Tools: cfgs})
	if err != nil {
		t.Fatal(err)
	}
	sub, _, err := rt.Engine.Accept(ctx, sess.ID, "hello after a crash", "")
	if err != nil {
		t.Fatal(err)
	}
	// The crashed worker: a lease far in the future…
	cur, err := rt.Ports.Journal.GetSubmission(ctx, sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	if cur.Phase != contracts.PhaseModel {
		t.Fatalf("accepted submission is %s, want MODEL", cur.Phase)
	}
	held := cur
	held.LeaseOwner, held.LeaseUntil, held.Attempt = "dead-boot", time.Now().Add(24*time.Hour), 1
	if _, err := rt.Ports.Journal.UpdateSubmission(ctx, held, cur.Version); err != nil {
		t.Fatal(err)
	}
	// …and its message in flight for an hour.
	ds, err := rt.Ports.Queue.Receive(ctx, contracts.QueueModel, 10, time.Hour)
	if err != nil || len(ds) != 1 || ds[0].Message.SubmissionID != sub.ID {
		t.Fatalf("receive: %+v, %v", ds, err)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}

	rt = mustOpen(t, dir)
	got, err := rt.Ports.Journal.GetSubmission(ctx, sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.LeaseOwner != "" {
		t.Fatalf("boot did not break the dead lease: %q", got.LeaseOwner)
	}

	sctx, cancel := context.WithCancel(ctx)
	served := make(chan struct{})
	go func() {
		rt.Serve(sctx)
		close(served)
	}()
	t.Cleanup(func() {
		cancel()
		<-served
		rt.Close()
	})

	deadline := time.Now().Add(20 * time.Second)
	for {
		got, err = rt.Ports.Journal.GetSubmission(ctx, sub.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Phase.Terminal() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not finished after 20s: %s step %d lease %q", got.Phase, got.Step, got.LeaseOwner)
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}
	if got.Phase != contracts.PhaseCommitted || !strings.Contains(got.Result, "hello after a crash") {
		t.Fatalf("got %s %q (%s), want COMMITTED with the echo", got.Phase, got.Result, got.Error)
	}
	s, err := rt.Ports.Journal.GetSession(ctx, sess.ID)
	if err != nil || s.Active != "" || s.Head == "" {
		t.Fatalf("session after commit: %+v, %v", s, err)
	}
}
