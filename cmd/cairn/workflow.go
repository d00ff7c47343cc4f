package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cairnrun/cairn/client"
	"github.com/cairnrun/cairn/shared/contracts"
)

// cmdWorkflow: `cairn workflow run FILE.star [--input JSON] [--key K]`
// creates the workflow, starts a run and shows its nodes starting and
// finishing until the run ends (exit 0 succeeded, 1 failed).
func cmdWorkflow(ctx context.Context, env envDefaults, args []string) error {
	if len(args) == 0 || args[0] != "run" {
		return fmt.Errorf("workflow: want `cairn workflow run FILE.star [--input JSON]`: %w", errUsage)
	}
	fs := flag.NewFlagSet("workflow run", flag.ContinueOnError)
	var t target
	t.flags(fs, env)
	input := fs.String("input", "", "the run's input, JSON (visible to the script as input)")
	key := fs.String("key", "", "idempotency key: the same key is the same run")
	every := fs.Duration("poll", 200*time.Millisecond, "how often to check the run's progress")
	if err := fs.Parse(reorder(args[1:])); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("workflow run: give exactly one script file: %w", errUsage)
	}
	src, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		return fmt.Errorf("reading the script: %w", err)
	}
	var in json.RawMessage
	if *input != "" {
		if !json.Valid([]byte(*input)) {
			return fmt.Errorf("--input is not valid JSON: %w", errUsage)
		}
		in = json.RawMessage(*input)
	}
	cl, closeFn, err := t.open(ctx, env)
	if err != nil {
		return err
	}
	defer closeFn()
	name := strings.TrimSuffix(filepath.Base(fs.Arg(0)), filepath.Ext(fs.Arg(0)))
	wf, err := cl.CreateWorkflow(ctx, name, string(src))
	if err != nil {
		return fmt.Errorf("creating workflow: %w", err)
	}
	run, err := cl.StartRun(ctx, wf.ID, client.RunOptions{Input: in, Key: *key})
	if err != nil {
		return fmt.Errorf("starting run: %w", err)
	}
	fmt.Printf("workflow %s · run %s\n", wf.ID, run.ID)
	return watchRun(ctx, cl, wf.ID, run.ID, *every)
}

// watchRun prints each node once when it starts and once when it ends,
// then the run's outcome.
func watchRun(ctx context.Context, cl *client.Client, wfID, runID string, every time.Duration) error {
	started, ended := map[string]bool{}, map[string]bool{}
	for {
		v, err := cl.Run(ctx, wfID, runID, client.ListOptions{})
		if err != nil {
			return err
		}
		for next := v.NodesNext; next != ""; { // the rest of the nodes, a page at a time
			more, err := cl.Nodes(ctx, wfID, runID, client.ListOptions{Cursor: next})
			if err != nil {
				return err
			}
			v.Nodes, next = append(v.Nodes, more.Items...), more.NextCursor
		}
		for _, n := range v.Nodes {
			label := n.ID
			if n.Key != "" {
				label += " (" + n.Key + ")"
			}
			if !started[n.ID] {
				started[n.ID] = true
				fmt.Printf("  ▶ node %d %s: %s\n", n.Seq, label, clip(n.Spec.Prompt, 60))
			}
			if n.Result != nil && !ended[n.ID] {
				ended[n.ID] = true
				if n.Result.OK {
					fmt.Printf("  ✓ node %d %s: %s\n", n.Seq, label, clip(n.Result.Output, 60))
				} else {
					fmt.Printf("  ✗ node %d %s: %s\n", n.Seq, label, clip(n.Result.Error, 60))
				}
			}
		}
		switch v.Status {
		case contracts.RunSucceeded:
			fmt.Printf("run %s succeeded after %d nodes: %s\n", runID, len(v.Nodes), v.Result)
			return nil
		case contracts.RunFailed:
			fmt.Printf("run %s failed: %s\n", runID, v.Error)
			return errRunFailed
		case contracts.RunCancelled:
			fmt.Printf("run %s was cancelled: %s\n", runID, v.Error)
			return errRunFailed
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(every):
		}
	}
}

var (
	errRunFailed = errors.New("the workflow run failed")
	errUsage     = errors.New("usage: cairn workflow run FILE.star [--input JSON] [--key K] [--addr URL | --data DIR]")
)

// reorder moves flags (every one of this command takes a value) before the
// positional arguments, so `run FILE --input {}` parses like `run --input {} FILE`.
func reorder(args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			flags = append(flags, a)
			if !strings.Contains(a, "=") && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	return append(flags, pos...)
}

func clip(s string, n int) string {
	s = strings.ReplaceAll(strings.TrimSpace(s), "\n", " ")
	if len([]rune(s)) > n {
		return string([]rune(s)[:n]) + "…"
	}
	return s
}
