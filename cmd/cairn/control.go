package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/cairnrun/cairn/client"
	"github.com/cairnrun/cairn/shared/contracts"
)

// cmdCancel: cairn cancel SESSION SUBMISSION [--reason TEXT] ends a turn
// CANCELLED (its running model call and tool call are stopped).
func cmdCancel(ctx context.Context, env envDefaults, args []string) error {
	fs := flag.NewFlagSet("cancel", flag.ContinueOnError)
	var t target
	t.flags(fs, env)
	reason := fs.String("reason", "", "why, recorded with the cancel")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return errors.New("cancel: want SESSION SUBMISSION")
	}
	cl, closeFn, err := t.open(ctx, env)
	if err != nil {
		return err
	}
	defer closeFn()
	sub, err := cl.Cancel(ctx, pos[0], pos[1], *reason)
	if err != nil {
		return err
	}
	fmt.Printf("%s %s at step %d: %s\n", sub.ID, sub.Phase, sub.Step+1, sub.Error)
	return nil
}

// cmdRetry: cairn retry SESSION SUBMISSION [--max-steps N …] resumes a
// FAILED turn from its failing step and follows it.
func cmdRetry(ctx context.Context, env envDefaults, args []string) error {
	fs := flag.NewFlagSet("retry", flag.ContinueOnError)
	var t target
	t.flags(fs, env)
	steps := fs.Int("max-steps", 0, "raise the turn's step limit to N")
	tokens := fs.Int("max-tokens", 0, "raise the turn's token limit to N")
	wall := fs.Int("max-wall-seconds", 0, "raise the turn's run-time limit to N seconds")
	wait := fs.Bool("wait", true, "follow the turn after retrying")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return errors.New("retry: want SESSION SUBMISSION")
	}
	var limits *contracts.Limits
	if *steps != 0 || *tokens != 0 || *wall != 0 {
		limits = &contracts.Limits{MaxSteps: *steps, MaxTokens: *tokens, MaxWallSeconds: *wall}
	}
	cl, closeFn, err := t.open(ctx, env)
	if err != nil {
		return err
	}
	defer closeFn()
	sid := pos[0]
	sub, err := cl.Retry(ctx, sid, pos[1], limits)
	if err != nil {
		return err
	}
	fmt.Printf("retrying %s (retry %d): resumes at step %d\n", sub.ID, len(sub.Retries), sub.Step+1)
	if !*wait {
		return nil
	}
	return followInterruptible(ctx, cl, os.Stdout, sid, sub.ID, contracts.Ask, os.Stdin)
}

// followInterruptible follows a submission like follow, with Ctrl-C: the
// first asks the server to cancel the turn and goes on following until it
// ends; a second detaches (the turn goes on being cancelled server-side).
func followInterruptible(ctx context.Context, cl *client.Client, w io.Writer, sid, subID string, approve contracts.Decision, in io.Reader) error {
	ints := make(chan os.Signal, 2)
	signal.Notify(ints, os.Interrupt)
	defer signal.Stop(ints)
	fctx, detach := context.WithCancel(ctx)
	defer detach()
	detached := make(chan struct{})
	go func() {
		select {
		case <-ints:
		case <-fctx.Done():
			return
		}
		fmt.Fprintf(w, "\n^C cancelling %s … (Ctrl-C again to detach)\n", subID)
		go func() {
			if _, err := cl.Cancel(fctx, sid, subID, "interrupted in cairn run"); err != nil && fctx.Err() == nil {
				fmt.Fprintf(w, "  cancel: %v\n", err)
			}
		}()
		select {
		case <-ints:
			close(detached)
			detach()
		case <-fctx.Done():
		}
	}()
	err := follow(fctx, cl, w, sid, subID, approve, in)
	select {
	case <-detached:
		fmt.Fprintf(w, "detached; follow it with: cairn show %s %s\n", sid, subID)
		return errDetached
	default:
	}
	return err
}

// errDetached ends `cairn run` with exit code 130 (interrupted).
var errDetached = errors.New("detached from the turn")

// interruptSignals are the signals main turns into the end of its context:
// `cairn run` and `cairn retry` handle Ctrl-C themselves (cancel, then
// detach).
func interruptSignals(cmd string) []os.Signal {
	if cmd == "run" || cmd == "retry" {
		return []os.Signal{sigterm}
	}
	return []os.Signal{os.Interrupt, sigterm}
}

var sigterm os.Signal = syscall.SIGTERM

// printTree prints the session's transcript tree, one node a line,
// indented under its parent, with the node ids `cairn run --from` takes;
// "*" marks the path to the head.
func printTree(ctx context.Context, cl *client.Client, w io.Writer, sid string) error {
	sess, err := cl.Session(ctx, sid)
	if err != nil {
		return err
	}
	var nodes []contracts.Node
	for n, err := range client.All(func(cursor string) (client.Page[contracts.Node], error) {
		return cl.Transcript(ctx, sid, client.TranscriptOptions{Tree: true, ListOptions: client.ListOptions{Limit: 100, Cursor: cursor}})
	}) {
		if err != nil {
			return err
		}
		nodes = append(nodes, n)
	}
	parent := map[string]string{}
	for _, n := range nodes {
		parent[n.ID] = n.Parent
	}
	onHead := map[string]bool{}
	for id := sess.Head; id != ""; id = parent[id] {
		onHead[id] = true
	}
	depth := map[string]int{}
	for _, n := range nodes { // parents come before their children
		if n.Parent != "" {
			depth[n.ID] = depth[n.Parent] + 1
		}
		mark := " "
		if onHead[n.ID] {
			mark = "*"
		}
		fmt.Fprintf(w, "%s %s%s %s: %s\n", mark, strings.Repeat("  ", depth[n.ID]), n.ID, n.Role, clip(nodeText(n), 60))
	}
	return nil
}

// nodeText is a node's text, or what it asks for or returns.
func nodeText(n contracts.Node) string {
	var parts []string
	for _, b := range n.Blocks {
		switch {
		case b.Type == contracts.BlockText:
			parts = append(parts, b.Text)
		case b.ToolCall != nil:
			parts = append(parts, "→ "+b.ToolCall.Name)
		case b.ToolResult != nil:
			parts = append(parts, "✓ "+b.ToolResult.Content)
		}
	}
	return strings.Join(parts, " ")
}

// parseArgs parses flags wherever they stand among the positional
// arguments (`cairn cancel S SUB --reason X` as well as `--reason X S
// SUB`) and returns the positional ones; "--" ends the flags.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}
