package main

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/client"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/awstest"
)

// `cairn dev --backend aws` runs the serverless shape against the endpoint:
// HTTP → API Gateway v2 event → api handler; the harness drives the phase
// handlers over SQS; the turn commits with its state in DynamoDB.
func TestDevAWSBackend(t *testing.T) {
	ep := awstest.Endpoint(t)
	data := t.TempDir()
	cmd := exec.Command(cairnBin, "dev", "--backend", "aws", "--endpoint", ep, "--addr", "127.0.0.1:0", "--data", data,
		"--table", awstest.Name(t, "cli"), "--bucket", awstest.Name(t, "cli-blobs"), "--queue-prefix", awstest.Name(t, "cli"), "--token", "aws-test")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + data}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var cl *client.Client
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if addr, ok := strings.CutPrefix(sc.Text(), "cairn dev (aws backend) listening on "); ok {
			if cl, err = remoteClient(addr, "aws-test"); err != nil {
				t.Fatal(err)
			}
			go func() {
				for sc.Scan() {
				}
			}()
			break
		}
	}
	if cl == nil {
		t.Fatal("cairn dev --backend aws exited before listening")
	}
	ctx := context.Background()
	s, err := cl.CreateSession(ctx, contracts.SessionSpec{Model: "scripted:demo"})
	if err != nil {
		t.Fatal(err)
	}
	// The bearer token is the owner's, handed to the api function as the
	// JWT authorizer's claims would be; an unknown one carries no caller.
	if s.Owner != devIssuer+"|owner" {
		t.Fatalf("session owner %q, want %s|owner", s.Owner, devIssuer)
	}
	var ae *client.Error
	stranger, _ := remoteClient(strings.TrimPrefix(cl.BaseURL(), "http://"), "nope")
	if _, err := stranger.Session(ctx, s.ID); !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized {
		t.Fatalf("an unknown token: %v, want 401", err)
	}
	sub, err := cl.Submit(ctx, s.ID, "go", client.SubmitOptions{Key: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	got := waitDone(t, ctx, cl, s.ID, sub.ID)
	if got.Phase != contracts.PhaseCommitted || got.Step != 3 {
		t.Fatalf("%s step %d: %s", got.Phase, got.Step, got.Error)
	}
	if b, err := os.ReadFile(data + "/sandboxes/" + s.ID + "/notes.txt"); err != nil || !strings.HasPrefix(string(b), "cairn was here") {
		t.Fatalf("notes.txt = %q, %v", b, err)
	}
}
