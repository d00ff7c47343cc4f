package client_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnrun/cairn/client"
	"github.com/cairnrun/cairn/shared/contracts"
)

// collect returns a follower callback appending to *got.
func collect(mu *sync.Mutex, got *[]contracts.Event) func(contracts.Event) error {
	return func(ev contracts.Event) error {
		mu.Lock()
		defer mu.Unlock()
		*got = append(*got, ev)
		return nil
	}
}

// syncBuffer is a bytes.Buffer a follower writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// checkEvents fails t unless a follower got exactly the turn's events
// the journal holds (read in one page), in order, ending with committed.
func checkEvents(t *testing.T, c *client.Client, sessionID, subID string, got []contracts.Event) {
	t.Helper()
	page, err := c.Events(context.Background(), sessionID, subID, client.EventsOptions{})
	if err != nil || !page.Done {
		t.Fatalf("reading the journal's events: done %v, %v", page.Done, err)
	}
	seqs := func(evs []contracts.Event) []int64 {
		var out []int64
		for _, ev := range evs {
			out = append(out, ev.Seq)
		}
		return out
	}
	if g, w := seqs(got), seqs(page.Events); !slices.Equal(g, w) {
		t.Fatalf("the follower got the events %v; the journal has %v (an event lost or repeated)", g, w)
	}
	if last := got[len(got)-1]; last.Type != contracts.EventCommitted {
		t.Fatalf("the last event is %s, want committed", last.Type)
	}
}

// A turn submitted over real HTTP is followed to its commit by long-poll
// and by SSE; both hand on every event the journal has, once each.
func TestFollowToCommit(t *testing.T) {
	s := newCairn(t)
	c, err := client.New(s.URL, client.WithBearer(s.Token))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, sse := range []bool{false, true} {
		name := map[bool]string{false: "long-poll", true: "sse"}[sse]
		t.Run(name, func(t *testing.T) {
			sess, err := c.CreateSession(ctx, contracts.SessionSpec{Model: "scripted:demo"})
			if err != nil {
				t.Fatal(err)
			}
			sub, err := c.Submit(ctx, sess.ID, "do the demo", client.SubmitOptions{Key: name})
			if err != nil {
				t.Fatal(err)
			}
			if again, err := c.Submit(ctx, sess.ID, "do the demo", client.SubmitOptions{Key: name}); err != nil || again.ID != sub.ID {
				t.Fatalf("the same idempotency key: %s, %v; want %s", again.ID, err, sub.ID)
			}
			var mu sync.Mutex
			var got []contracts.Event
			end, err := c.Follow(ctx, sess.ID, sub.ID, client.FollowOptions{SSE: sse}, collect(&mu, &got))
			if err != nil {
				t.Fatal(err)
			}
			if end.Phase != contracts.PhaseCommitted || end.Last != got[len(got)-1].Seq {
				t.Fatalf("end %+v after %d events", end, len(got))
			}
			checkEvents(t, c, sess.ID, sub.ID, got)
			// Resuming after an event hands on only what follows it.
			var rest []contracts.Event
			if _, err := c.Follow(ctx, sess.ID, sub.ID, client.FollowOptions{SSE: sse, After: got[2].Seq}, collect(&mu, &rest)); err != nil {
				t.Fatal(err)
			}
			if len(rest) != len(got)-3 || rest[0].Seq != got[3].Seq {
				t.Fatalf("after the third event: %d events from seq %d; want %d from %d", len(rest), rest[0].Seq, len(got)-3, got[3].Seq)
			}
		})
	}
}

// An SSE follower loses the server — closed while a tool call of the turn
// waits — and the server is started again on the same address with the
// same data: the follower reconnects, says so in one line, resumes with
// Last-Event-ID, and the turn's events arrive once each, none missing,
// through to the commit.
func TestSSEResumesAcrossARestart(t *testing.T) {
	data := t.TempDir()
	s1, err := startCairn(data, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s1.stop)
	c, err := client.New(s1.URL, client.WithTokenFile(client.TokenPath(data)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sess, err := c.CreateSession(ctx, contracts.SessionSpec{Model: "scripted:shell"})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := c.Submit(ctx, sess.ID, "until [ -e release ]; do sleep 0.05; done; echo released", client.SubmitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []contracts.Event
	running := make(chan struct{})
	var once sync.Once
	var progress syncBuffer
	type result struct {
		end client.FollowEnd
		err error
	}
	done := make(chan result, 1)
	go func() {
		end, err := c.Follow(ctx, sess.ID, sub.ID, client.FollowOptions{SSE: true, Progress: &progress}, func(ev contracts.Event) error {
			if ev.Type == contracts.EventToolStarted {
				once.Do(func() { close(running) })
			}
			return collect(&mu, &got)(ev)
		})
		done <- result{end, err}
	}()
	select {
	case <-running:
	case r := <-done:
		t.Fatalf("the follow ended before the call ran: %+v %v", r.end, r.err)
	}
	s1.stop()
	s2, err := startCairn(data, s1.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s2.stop)
	if err := os.WriteFile(s2.File(sess.ID, "release"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(2 * time.Minute): // a hang, not a synchronisation
		t.Fatalf("no end after 2 minutes; progress %q", progress.String())
	}
	if r.err != nil || r.end.Phase != contracts.PhaseCommitted {
		t.Fatalf("follow: %+v %v; progress %q", r.end, r.err, progress.String())
	}
	t.Logf("progress: %s(%d events)", progress.String(), len(got))
	checkEvents(t, c, sess.ID, sub.ID, got)
	line := regexp.MustCompile(`^  ↻ lost the server \([^)]*\); reconnecting… reconnected after [0-9.]+m?s, resuming after event [1-9][0-9]*\n$`)
	if !line.MatchString(progress.String()) {
		t.Fatalf("want one line saying the follower reconnected and where it resumed: %q", progress.String())
	}
}

// FollowSession streams every turn of a session in order with its end,
// and resumes exactly after a message id it was given.
func TestFollowSession(t *testing.T) {
	s := newCairn(t)
	c, err := client.New(s.URL, client.WithBearer(s.Token))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sess, err := c.CreateSession(ctx, contracts.SessionSpec{Model: "scripted:plain"})
	if err != nil {
		t.Fatal(err)
	}
	var subs []string
	for _, p := range []string{"one", "two"} {
		sub, err := c.Submit(ctx, sess.ID, p, client.SubmitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, sub.ID)
	}
	var all []client.SessionEvent
	ends := 0
	err = c.FollowSession(ctx, sess.ID, client.SessionFollowOptions{}, func(se client.SessionEvent) error {
		all = append(all, se)
		if se.TurnEnd != nil {
			if ends++; ends == 2 {
				return client.ErrStop
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	first := all[0]
	if first.Event.SubmissionID != subs[0] || first.ID != subs[0]+":1" {
		t.Fatalf("first message %+v; want event 1 of %s", first, subs[0])
	}
	last := all[len(all)-1]
	if last.TurnEnd == nil || last.TurnEnd.ID != subs[1] || last.TurnEnd.Phase != contracts.PhaseCommitted || last.ID != subs[1]+":end" {
		t.Fatalf("last message %+v; want the end of %s", last, subs[1])
	}
	k := 2 // resume after the second message
	var rest []client.SessionEvent
	err = c.FollowSession(ctx, sess.ID, client.SessionFollowOptions{From: all[k-1].ID}, func(se client.SessionEvent) error {
		rest = append(rest, se)
		if len(rest) == len(all)-k {
			return client.ErrStop
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, se := range rest {
		if se.ID != all[k+i].ID {
			t.Fatalf("resumed message %d is %s, want %s", i, se.ID, all[k+i].ID)
		}
	}
	// A callback's own error is returned as it is.
	boom := errors.New("boom")
	if err := c.FollowSession(ctx, sess.ID, client.SessionFollowOptions{}, func(client.SessionEvent) error { return boom }); err != boom {
		t.Fatalf("FollowSession returned %v, want the callback's error", err)
	}
}

// Where the API cannot stream (behind API Gateway it answers an event
// stream request 406), an SSE follower long-polls instead, and a session
// follower says it cannot stream.
func TestSSEFallsBackToLongPoll(t *testing.T) {
	s := newCairn(t)
	buffered := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.RT.API.ServeHTTP(w, r.WithContext(contracts.WithBufferedResponse(r.Context())))
	}))
	defer buffered.Close()
	c, _ := client.New(buffered.URL, client.WithBearer(s.Token))
	ctx := context.Background()
	sess, err := c.CreateSession(ctx, contracts.SessionSpec{Model: "scripted:demo"})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := c.Submit(ctx, sess.ID, "do the demo", client.SubmitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []contracts.Event
	end, err := c.Follow(ctx, sess.ID, sub.ID, client.FollowOptions{SSE: true}, collect(&mu, &got))
	if err != nil || end.Phase != contracts.PhaseCommitted {
		t.Fatalf("%+v %v", end, err)
	}
	checkEvents(t, c, sess.ID, sub.ID, got)
	err = c.FollowSession(ctx, sess.ID, client.SessionFollowOptions{}, func(client.SessionEvent) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "does not stream") {
		t.Fatalf("FollowSession where the API cannot stream: %v", err)
	}
}
