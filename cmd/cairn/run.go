package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/ids"
)

// parkedError ends `cairn run` with exit code 3: the turn waits for an
// approval that this process will not give.
type parkedError struct{ session, approval string }

func (p *parkedError) Error() string {
	return fmt.Sprintf("turn parked for approval; decide with: cairn approve %s %s allow|deny", p.session, p.approval)
}

func cmdRun(ctx context.Context, env envDefaults, args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var t target
	t.flags(fs, env)
	model := fs.String("model", "", "provider:model for a new session (default scripted:plain)")
	sessionID := fs.String("session", "", "continue this session instead of creating one")
	key := fs.String("key", "", "idempotency key (default random)")
	approve := fs.String("approve", "ask", "what to do when a tool call needs approval: ask | allow | deny")
	askTools := fs.String("ask", "", "comma-separated tools that need approval in a new session (e.g. bash,python)")
	denyTools := fs.String("deny", "", "comma-separated tools denied in a new session")
	kind := fs.String("sandbox", "", "sandbox kind of a new session: local, process or fargate (default: the server's)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	prompt := strings.Join(fs.Args(), " ")
	if strings.TrimSpace(prompt) == "" {
		return errors.New(`run: give a prompt: cairn run "what to do"`)
	}
	if *approve != "ask" && *approve != "allow" && *approve != "deny" {
		return fmt.Errorf("run: --approve %q: want ask, allow or deny", *approve)
	}
	cl, closeFn, err := t.open(ctx, env)
	if err != nil {
		return err
	}
	defer closeFn()
	sid := *sessionID
	if sid == "" {
		spec := contracts.SessionSpec{Model: *model, Sandbox: contracts.SandboxSpec{Kind: *kind}}
		for d, list := range map[contracts.Decision]string{contracts.Ask: *askTools, contracts.Deny: *denyTools} {
			for _, name := range strings.Split(list, ",") {
				if name = strings.TrimSpace(name); name != "" {
					if spec.Policy.Tools == nil {
						spec.Policy.Tools = map[string]contracts.Decision{}
					}
					spec.Policy.Tools[name] = d
				}
			}
		}
		s, err := cl.createSession(ctx, spec)
		if err != nil {
			return fmt.Errorf("creating session: %w", err)
		}
		sid = s.ID
	}
	if *key == "" {
		*key = ids.RandomHex(8)
	}
	sub, err := cl.submit(ctx, sid, prompt, *key)
	if err != nil {
		return fmt.Errorf("submitting: %w", err)
	}
	fmt.Printf("session %s · submission %s\n", sid, sub.ID)
	return follow(ctx, cl, os.Stdout, sid, sub.ID, contracts.Decision(*approve), os.Stdin)
}

// follow streams a submission's progress to w until it ends or parks.
func follow(ctx context.Context, cl *client, w io.Writer, sid, subID string, approve contracts.Decision, in io.Reader) error {
	p := &printer{w: w, step: -1}
	var after int64
	for {
		page, err := cl.events(ctx, sid, subID, after, 20*time.Second)
		if err != nil {
			return fmt.Errorf("reading events: %w", err)
		}
		for _, ev := range page.Events {
			p.print(ev)
			if ev.Type == contracts.EventApprovalNeeded {
				if err := ask(ctx, cl, w, sid, ev, approve, in); err != nil {
					return err
				}
			}
		}
		after = page.Next
		if page.Done {
			break
		}
	}
	p.endLine()
	sub, err := cl.submission(ctx, sid, subID)
	if err != nil {
		return err
	}
	if sub.Phase == contracts.PhaseCommitted {
		fmt.Fprintf(w, "committed %s in %d steps\n", sub.ID, sub.Step+1)
		return nil
	}
	return fmt.Errorf("submission %s %s at step %d: %s", sub.ID, sub.Phase, sub.Step+1, sub.Error)
}

func ask(ctx context.Context, cl *client, w io.Writer, sid string, ev contracts.Event, approve contracts.Decision, in io.Reader) error {
	sess, err := cl.session(ctx, sid)
	if err != nil {
		return err
	}
	pending := false
	for _, a := range sess.PendingApprovals {
		pending = pending || a.ID == ev.ApprovalID
	}
	if !pending {
		return nil // decided already (events are replayed from the start)
	}
	d := approve
	if d == contracts.Ask {
		if f, ok := in.(*os.File); !ok || !isTerminal(f) {
			return &parkedError{session: sid, approval: ev.ApprovalID}
		}
		fmt.Fprintf(w, "  ? allow %s %s? [y/N] ", ev.Tool, unescapeJSON(ev.Text))
		line, _ := bufio.NewReader(in).ReadString('\n')
		d = contracts.Deny
		if strings.HasPrefix(strings.ToLower(strings.TrimSpace(line)), "y") {
			d = contracts.Allow
		}
	}
	if _, err := cl.decide(ctx, sid, ev.ApprovalID, d, "from cairn run"); err != nil {
		return fmt.Errorf("deciding approval %s: %w", ev.ApprovalID, err)
	}
	fmt.Fprintf(w, "  · %s %s\n", d, ev.ApprovalID)
	return nil
}

// isTerminal reports whether f is a terminal (not /dev/null, a pipe or a file).
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// printer renders events as human progress lines.
type printer struct {
	w      io.Writer
	step   int
	inText bool
}

func (p *printer) endLine() {
	if p.inText {
		fmt.Fprintln(p.w)
		p.inText = false
	}
}

func (p *printer) print(ev contracts.Event) {
	switch ev.Type {
	case contracts.EventStep:
		p.endLine()
		p.step = ev.Step
		fmt.Fprintf(p.w, "[step %d] ", ev.Step+1)
		p.inText = true
	case contracts.EventTextDelta:
		fmt.Fprint(p.w, ev.Text)
		p.inText = true
	case contracts.EventToolStarted:
		p.endLine()
		fmt.Fprintf(p.w, "  → %s %s\n", ev.Tool, short(ev.Text, 100))
	case contracts.EventToolFinished:
		mark := "✓"
		if ev.IsError {
			mark = "✗"
		}
		fmt.Fprintf(p.w, "  %s %s: %s\n", mark, ev.Tool, short(ev.Text, 100))
	case contracts.EventApprovalNeeded:
		p.endLine()
		fmt.Fprintf(p.w, "  ! approval needed for %s %s (approval %s)\n", ev.Tool, short(ev.Text, 100), ev.ApprovalID)
	case contracts.EventFailed:
		p.endLine()
		fmt.Fprintf(p.w, "  failed: %s\n", ev.Text)
	}
}

func short(s string, n int) string {
	s = strings.Join(strings.Fields(unescapeJSON(s)), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// unescapeJSON re-encodes a JSON text without HTML escapes (\u003e → >)
// for display; anything else is returned as is.
func unescapeJSON(s string) string {
	var v any
	if !strings.HasPrefix(s, "{") || json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return s
	}
	return strings.TrimSpace(buf.String())
}
