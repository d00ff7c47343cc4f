package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/client"
	"github.com/cairnrun/cairn/shared/contracts"
)

// The API's 4xx answers are *client.Error values with its status, code
// and message, also through the wrapping of a follower.
func TestErrorsAreTyped(t *testing.T) {
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
	stranger, _ := client.New(s.URL, client.WithBearer("not-a-token"))
	other, _ := client.New(s.URL, client.WithBearer(s.AddToken("someone")))
	for _, tc := range []struct {
		name   string
		call   func() error
		status int
		code   string
		says   string
	}{
		{"unknown session", func() error { _, err := c.Session(ctx, "ses_nope"); return err }, 404, "not_found", "ses_nope"},
		{"another's session", func() error { _, err := other.Session(ctx, sess.ID); return err }, 404, "not_found", sess.ID},
		{"bad model", func() error {
			_, err := c.CreateSession(ctx, contracts.SessionSpec{Model: "nonsense"})
			return err
		}, 400, "invalid_request", "provider:model"},
		{"bad token", func() error { _, err := stranger.Sessions(ctx, client.ListOptions{}); return err }, 401, "unauthorized", ""},
		{"bad limit", func() error { _, err := c.Sessions(ctx, client.ListOptions{Limit: 1000}); return err }, 400, "invalid_request", "limit"},
		{"retry a committed turn", func() error {
			sub, err := c.Submit(ctx, sess.ID, "hi", client.SubmitOptions{})
			if err != nil {
				return err
			}
			if _, err := c.Follow(ctx, sess.ID, sub.ID, client.FollowOptions{}, func(contracts.Event) error { return nil }); err != nil {
				return err
			}
			_, err = c.Retry(ctx, sess.ID, sub.ID, nil)
			return err
		}, 409, "conflict", ""},
		{"follow an unknown turn", func() error {
			_, err := c.Follow(ctx, sess.ID, "sub_nope", client.FollowOptions{SSE: true}, func(contracts.Event) error { return nil })
			if err != nil && !strings.HasPrefix(err.Error(), "reading events: ") {
				t.Errorf("a follower's error %q does not say what failed", err)
			}
			return err
		}, 404, "not_found", ""},
		{"an unknown workflow", func() error { _, err := c.Runs(ctx, "wf_nope", client.ListOptions{}); return err }, 404, "not_found", ""},
	} {
		err := tc.call()
		var ae *client.Error
		if !errors.As(err, &ae) || ae.Status != tc.status || ae.Code != tc.code || !strings.Contains(ae.Message, tc.says) {
			t.Errorf("%s: %v (%#v); want %d %s saying %q", tc.name, err, ae, tc.status, tc.code, tc.says)
		}
	}
}

// An answer that is not the API's error body (a proxy's page) is still an
// *Error with its status, its text as the message.
func TestErrorOfAProxy(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "<html>Bad Gateway</html>", http.StatusBadGateway)
	}))
	defer srv.Close()
	c, _ := client.New(srv.URL)
	_, err := c.Session(context.Background(), "ses_1")
	var ae *client.Error
	if !errors.As(err, &ae) || ae.Status != 502 || ae.Code != "" || ae.Message != "<html>Bad Gateway</html>" {
		t.Fatalf("%v (%#v)", err, ae)
	}
	if got := err.Error(); got != " (502): <html>Bad Gateway</html>" {
		t.Fatalf("Error() = %q", got)
	}
}

// The MCP passthrough answers a JSON-RPC request with the server's
// messages: tools/list lists cairn's tools.
func TestMCPPassthrough(t *testing.T) {
	s := newCairn(t)
	c, _ := client.New(s.URL, client.WithBearer(s.Token))
	ctx := context.Background()
	init := json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if msgs, err := c.MCP(ctx, init); err != nil || len(msgs) != 1 || !strings.Contains(string(msgs[0]), `"serverInfo"`) {
		t.Fatalf("initialize: %s %v", msgs, err)
	}
	msgs, err := c.MCP(ctx, json.RawMessage(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
	if err != nil || len(msgs) != 1 {
		t.Fatalf("tools/list: %s %v", msgs, err)
	}
	var resp struct {
		Result struct {
			Tools []struct{ Name string } `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(msgs[0], &resp); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range resp.Result.Tools {
		names = append(names, tool.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "run_agent") {
		t.Fatalf("tools %v", names)
	}
	if msgs, err := c.MCP(ctx, json.RawMessage(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil || len(msgs) != 0 {
		t.Fatalf("a notification: %s %v", msgs, err)
	}
}
