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

	"github.com/cairnrun/cairn/client"
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
	from := fs.String("from", "", "with --session: start the turn from this transcript node (a fork) instead of the head")
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
	if *from != "" && *sessionID == "" {
		return errors.New("run: --from NODE needs --session SESSION (the node's session)")
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
		s, err := cl.CreateSession(ctx, spec)
		if err != nil {
			return fmt.Errorf("creating session: %w", err)
		}
		sid = s.ID
	}
	if *key == "" {
		*key = ids.RandomHex(8)
	}
	sub, err := cl.Submit(ctx, sid, prompt, client.SubmitOptions{Key: *key, Parent: *from})
	if err != nil {
		return fmt.Errorf("submitting: %w", err)
	}
	fmt.Printf("session %s · submission %s\n", sid, sub.ID)
	return followInterruptible(ctx, cl, os.Stdout, sid, sub.ID, contracts.Decision(*approve), os.Stdin)
}

// follow streams a submission's progress to w until it ends or parks. If
// the server goes away (a restart), it reconnects and resumes after the
// last event it saw, saying so on w in one line (client.Client.Follow,
// long-polling: it works wherever the API is served).
func follow(ctx context.Context, cl *client.Client, w io.Writer, sid, subID string, approve contracts.Decision, in io.Reader) error {
	p := newPrinter(w)
	_, err := cl.Follow(ctx, sid, subID, client.FollowOptions{Wait: 20 * time.Second, Progress: w}, func(ev contracts.Event) error {
		p.print(ev)
		if ev.Type == contracts.EventApprovalNeeded {
			return ask(ctx, cl, w, sid, ev, approve, in)
		}
		return nil
	})
	if err != nil {
		return err
	}
	p.flush()
	var sub contracts.Submission
	if err := cl.Reconnecting(ctx, w, nil, func() (err error) {
		sub, err = cl.Submission(ctx, sid, subID)
		return err
	}); err != nil {
		return err
	}
	if sub.Phase == contracts.PhaseCommitted {
		fmt.Fprintf(w, "committed %s in %d steps\n", sub.ID, sub.Step+1)
		return nil
	}
	return fmt.Errorf("submission %s %s at step %d: %s", sub.ID, sub.Phase, sub.Step+1, sub.Error)
}

func ask(ctx context.Context, cl *client.Client, w io.Writer, sid string, ev contracts.Event, approve contracts.Decision, in io.Reader) error {
	var sess client.Session
	if err := cl.Reconnecting(ctx, w, nil, func() (err error) {
		sess, err = cl.Session(ctx, sid)
		return err
	}); err != nil {
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
	// Deciding the same way twice is a no-op, so a decision whose answer
	// was lost is simply sent again.
	if err := cl.Reconnecting(ctx, w, nil, func() error {
		_, err := cl.Decide(ctx, sid, ev.ApprovalID, d, "from cairn run")
		return err
	}); err != nil {
		return fmt.Errorf("deciding approval %s: %w", ev.ApprovalID, err)
	}
	fmt.Fprintf(w, "  · %s %s\n", d, ev.ApprovalID)
	return nil
}

func exitCode(err error) int {
	var pe *parkedError
	if errors.As(err, &pe) {
		return 3
	}
	if errors.Is(err, errDetached) {
		return 130
	}
	return 1
}

// isTerminal reports whether f is a terminal (not /dev/null, a pipe or a file).
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// printer renders events as human progress lines. A step's text is held
// until the step's model output is over (the next event of another kind,
// or the end) and then printed once, as "[step N] text": the text of the
// step's last model attempt, without the text of attempts a
// stream_discarded event voids (a stream cut by a crash or an error, redone
// under a new attempt) — also text of a voided attempt that arrives after
// its discard. So what is printed for a step is what the step recorded.
type printer struct {
	w    io.Writer
	step int                      // step whose text is held; -1: none
	text map[int]*strings.Builder // attempt → held text of step
	void map[[2]int]bool          // (step, attempt) discarded
}

func newPrinter(w io.Writer) *printer {
	return &printer{w: w, step: -1, text: map[int]*strings.Builder{}, void: map[[2]int]bool{}}
}

// hold starts holding the text of step (printing the held one first).
func (p *printer) hold(step int) {
	if p.step != step {
		p.flush()
		p.step = step
	}
}

// flush prints the held step's text, if a step is held.
func (p *printer) flush() {
	if p.step < 0 {
		return
	}
	last := -1
	for a := range p.text {
		if !p.void[[2]int{p.step, a}] && a > last {
			last = a
		}
	}
	text := ""
	if last >= 0 {
		text = p.text[last].String()
	}
	fmt.Fprintln(p.w, strings.TrimSpace(fmt.Sprintf("[step %d] %s", p.step+1, text)))
	p.step = -1
	clear(p.text)
}

func (p *printer) print(ev contracts.Event) {
	switch ev.Type {
	case contracts.EventStep:
		p.hold(ev.Step)
		return
	case contracts.EventTextDelta:
		if p.void[[2]int{ev.Step, ev.Attempt}] {
			return
		}
		p.hold(ev.Step)
		if p.text[ev.Attempt] == nil {
			p.text[ev.Attempt] = &strings.Builder{}
		}
		p.text[ev.Attempt].WriteString(ev.Text)
		return
	case contracts.EventStreamDiscarded:
		p.void[[2]int{ev.Step, ev.Attempt}] = true
		if ev.Step == p.step {
			delete(p.text, ev.Attempt)
		}
		return
	}
	p.flush()
	switch ev.Type {
	case contracts.EventToolStarted:
		fmt.Fprintf(p.w, "  → %s %s\n", ev.Tool, short(ev.Text, 100))
	case contracts.EventToolFinished, contracts.EventToolDenied, contracts.EventToolInterrupted:
		mark := "✓"
		if ev.IsError {
			mark = "✗"
		}
		fmt.Fprintf(p.w, "  %s %s: %s\n", mark, ev.Tool, short(ev.Text, 100))
	case contracts.EventApprovalNeeded:
		fmt.Fprintf(p.w, "  ! approval needed for %s %s (approval %s)\n", ev.Tool, short(ev.Text, 100), ev.ApprovalID)
	case contracts.EventApprovalDecided:
		fmt.Fprintf(p.w, "  ! approval %s: %s\n", ev.ApprovalID, short(ev.Text, 100))
	case contracts.EventRepaired:
		fmt.Fprintf(p.w, "  ↻ repaired: %s\n", short(ev.Text, 100))
	case contracts.EventFailed:
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
