package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/client"
	"github.com/cairnrun/cairn/shared/contracts"
)

// sseEvents reads a turn's event stream from base (Last-Event-ID lastID
// unless ""), sending each journal event to got until the stream ends
// ("end", or the connection goes); it returns whether "end" came.
func sseEvents(t *testing.T, base, token, path, lastID string, got chan<- contracts.Event) bool {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), "GET", base+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("stream: %d", resp.StatusCode)
		return false
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = line[7:]
		case strings.HasPrefix(line, "data: "):
			if event == "end" {
				return true
			}
			var ev contracts.Event
			if err := json.Unmarshal([]byte(line[6:]), &ev); err == nil && ev.Seq > 0 {
				got <- ev
			}
		}
	}
	return false
}

// TestSSEResumesAcrossARestart: a client streaming a turn's events loses
// the server (SIGKILL) while a tool call waits; it reconnects to the
// restarted server with Last-Event-ID = the last id it saw, and the turn's
// events arrive exactly once each, none missing, through to "end".
func TestSSEResumesAcrossARestart(t *testing.T) {
	data := t.TempDir()
	d1, addr := startDevOn(t, data, "127.0.0.1:0", "sse-before")
	ctx := context.Background()
	s, err := d1.cl.CreateSession(ctx, contracts.SessionSpec{Model: "scripted:shell"})
	if err != nil {
		t.Fatal(err)
	}
	su, err := d1.cl.Submit(ctx, s.ID, "until [ -e release ]; do sleep 0.05; done; echo released", client.SubmitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := "/v1/sessions/" + s.ID + "/submissions/" + su.ID + "/events"
	got := make(chan contracts.Event, 1000)
	first := make(chan bool, 1)
	go func() { first <- sseEvents(t, "http://"+addr, "sse-before", path, "", got) }()
	var seen []contracts.Event
	for { // until the tool call is running: it waits for the file
		ev := <-got
		seen = append(seen, ev)
		if ev.Type == contracts.EventToolStarted {
			break
		}
	}
	d1.kill(t)
	if <-first {
		t.Fatal("the first stream ended with end while the turn was running")
	}
	for len(got) > 0 {
		seen = append(seen, <-got)
	}
	_, _ = startDevOn(t, data, addr, "sse-after")
	release := filepath.Join(data, "sandboxes", s.ID, "release")
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	last := seen[len(seen)-1].Seq
	if !sseEvents(t, "http://"+addr, "sse-after", path, jsonInt(last), got) {
		t.Fatal("the resumed stream did not reach end")
	}
	close(got)
	for ev := range got {
		seen = append(seen, ev)
	}
	for i, ev := range seen {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: %v", i, ev.Seq, seen)
		}
	}
	if end := seen[len(seen)-1]; end.Type != contracts.EventCommitted {
		t.Fatalf("the last event is %s, want committed", end.Type)
	}
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }
