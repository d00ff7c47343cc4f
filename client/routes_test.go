package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cairnrun/cairn/shared/api"
	"github.com/cairnrun/cairn/shared/contracts"
)

// The route table is the API's: every route api.Routes() lists has a row,
// every row is a route of the API, and every method it names is one of
// Client's.
func TestRouteTableIsTheAPIs(t *testing.T) {
	apiRoutes := api.Routes()
	for _, p := range apiRoutes {
		if len(routes[p]) == 0 {
			t.Errorf("the API serves %q but the client has no method for it: add one (through call/open with that pattern) and its row in client/routes.go", p)
		}
	}
	ct := reflect.TypeFor[*Client]()
	for p, methods := range routes {
		if !slices.Contains(apiRoutes, p) {
			t.Errorf("client/routes.go has the row %q, which is no route of the API (api.Routes())", p)
		}
		for _, m := range methods {
			if _, ok := ct.MethodByName(m); !ok {
				t.Errorf("client/routes.go names %s for %q: Client has no such method", m, p)
			}
		}
	}
}

// id is a path value with characters that must be escaped.
const id = "a/b c?"

// calls calls every method of the route table once (their answers are
// the recorder's canned ones).
var calls = map[string]func(context.Context, *Client) error{
	"Principal": func(ctx context.Context, c *Client) error {
		_, err := c.Principal(ctx)
		return err
	},
	"Workflows": func(ctx context.Context, c *Client) error {
		_, err := c.Workflows(ctx, ListOptions{Limit: 5, Cursor: "x"})
		return err
	},
	"CreateSession": func(ctx context.Context, c *Client) error {
		_, err := c.CreateSession(ctx, contracts.SessionSpec{Model: "scripted:plain"})
		return err
	},
	"Sessions": func(ctx context.Context, c *Client) error {
		_, err := c.Sessions(ctx, ListOptions{Limit: 5, Cursor: "x"})
		return err
	},
	"Session": func(ctx context.Context, c *Client) error { _, err := c.Session(ctx, id); return err },
	"Transcript": func(ctx context.Context, c *Client) error {
		_, err := c.Transcript(ctx, id, TranscriptOptions{Tree: true})
		return err
	},
	"Submit": func(ctx context.Context, c *Client) error {
		_, err := c.Submit(ctx, id, "hi", SubmitOptions{Key: "k", Parent: "n"})
		return err
	},
	"Submissions": func(ctx context.Context, c *Client) error {
		_, err := c.Submissions(ctx, id, SubmissionListOptions{Phase: contracts.PhaseFailed})
		return err
	},
	"Submission": func(ctx context.Context, c *Client) error { _, err := c.Submission(ctx, id, id+"2"); return err },
	"Events": func(ctx context.Context, c *Client) error {
		_, err := c.Events(ctx, id, id+"2", EventsOptions{After: 3})
		return err
	},
	"Follow": func(ctx context.Context, c *Client) error {
		_, err := c.Follow(ctx, id, id+"2", FollowOptions{SSE: true}, func(contracts.Event) error { return nil })
		return err
	},
	"SessionTurns": func(ctx context.Context, c *Client) error { _, err := c.SessionTurns(ctx, id); return err },
	"FollowSession": func(ctx context.Context, c *Client) error {
		return c.FollowSession(ctx, id, SessionFollowOptions{}, func(SessionEvent) error { return ErrStop })
	},
	"Approvals": func(ctx context.Context, c *Client) error { _, err := c.Approvals(ctx, id, ListOptions{}); return err },
	"Decide": func(ctx context.Context, c *Client) error {
		_, err := c.Decide(ctx, id, id+"2", contracts.Allow, "ok")
		return err
	},
	"Usage": func(ctx context.Context, c *Client) error {
		_, err := c.Usage(ctx, UsageOptions{Principal: "p"})
		return err
	},
	"CreateWorkflow": func(ctx context.Context, c *Client) error {
		_, err := c.CreateWorkflow(ctx, "w", "result = 1")
		return err
	},
	"Workflow": func(ctx context.Context, c *Client) error { _, err := c.Workflow(ctx, id); return err },
	"StartRun": func(ctx context.Context, c *Client) error {
		_, err := c.StartRun(ctx, id, RunOptions{Input: json.RawMessage(`{}`), Key: "k"})
		return err
	},
	"Runs": func(ctx context.Context, c *Client) error { _, err := c.Runs(ctx, id, ListOptions{}); return err },
	"Run": func(ctx context.Context, c *Client) error {
		_, err := c.Run(ctx, id, id+"2", ListOptions{})
		return err
	},
	"Nodes": func(ctx context.Context, c *Client) error {
		_, err := c.Nodes(ctx, id, id+"2", ListOptions{})
		return err
	},
	"Node": func(ctx context.Context, c *Client) error { _, err := c.Node(ctx, id, id+"2", id+"3"); return err },
	"CancelRun": func(ctx context.Context, c *Client) error {
		_, err := c.CancelRun(ctx, id, id+"2", "why")
		return err
	},
	"CreateSchedule": func(ctx context.Context, c *Client) error {
		_, err := c.CreateSchedule(ctx, id, "rate(5 minutes)", nil)
		return err
	},
	"WorkflowSchedules": func(ctx context.Context, c *Client) error {
		_, err := c.WorkflowSchedules(ctx, id, ListOptions{})
		return err
	},
	"Schedules":      func(ctx context.Context, c *Client) error { _, err := c.Schedules(ctx, ListOptions{}); return err },
	"Schedule":       func(ctx context.Context, c *Client) error { _, err := c.Schedule(ctx, id, id+"2"); return err },
	"PauseSchedule":  func(ctx context.Context, c *Client) error { _, err := c.PauseSchedule(ctx, id, id+"2"); return err },
	"ResumeSchedule": func(ctx context.Context, c *Client) error { _, err := c.ResumeSchedule(ctx, id, id+"2"); return err },
	"DeleteSchedule": func(ctx context.Context, c *Client) error { return c.DeleteSchedule(ctx, id, id+"2") },
	"Cancel":         func(ctx context.Context, c *Client) error { _, err := c.Cancel(ctx, id, id+"2", "why"); return err },
	"Retry": func(ctx context.Context, c *Client) error {
		_, err := c.Retry(ctx, id, id+"2", &contracts.Limits{MaxSteps: 9})
		return err
	},
	"MCP": func(ctx context.Context, c *Client) error {
		_, err := c.MCP(ctx, json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		return err
	},
}

// hit is a request the recorder saw: the pattern it matched and its path
// values.
type hit struct {
	pattern string
	values  []string
}

// recorder is an http.ServeMux with the API's patterns, each answering
// something the method can decode and recording what it matched.
func recorder(t *testing.T) (http.Handler, func() []hit) {
	var mu sync.Mutex
	var hits []hit
	mux := http.NewServeMux()
	for _, p := range api.Routes() {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			h := hit{pattern: r.Pattern}
			for _, seg := range strings.Split(r.Pattern, "/") {
				if name, ok := strings.CutPrefix(seg, "{"); ok {
					h.values = append(h.values, r.PathValue(strings.TrimSuffix(name, "}")))
				}
			}
			mu.Lock()
			hits = append(hits, h)
			mu.Unlock()
			sse := strings.Contains(r.Header.Get("Accept"), "text/event-stream") && !strings.Contains(r.Header.Get("Accept"), "application/json")
			switch {
			case r.Method == "DELETE":
				w.WriteHeader(http.StatusNoContent)
			case sse && strings.HasSuffix(p, "/submissions/{sid}/events"):
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, "event: end\ndata: {\"phase\":\"COMMITTED\",\"next\":0}\n\n")
			case sse:
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, "id: s:end\nevent: turn_end\ndata: {\"submission_id\":\"s\",\"phase\":\"COMMITTED\"}\n\n")
			case strings.HasSuffix(p, "/submissions/{sid}/events"):
				fmt.Fprint(w, `{"events":[],"next":3,"phase":"COMMITTED","done":true}`)
			case p == "POST /v1/mcp":
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
			default: // an empty page of any list, an empty record of anything else
				fmt.Fprint(w, `{"workflows":[],"sessions":[],"submissions":[],"nodes":[],"approvals":[],"runs":[],"schedules":[],"next_cursor":""}`)
			}
		})
	}
	return mux, func() []hit {
		mu.Lock()
		defer mu.Unlock()
		out := hits
		hits = nil
		return out
	}
}

// Every method of the route table sends exactly its route — the method
// and the path of its pattern, the path values escaped and arriving as
// given — over real HTTP, and every method of the table is called here.
func TestEveryMethodCallsItsRoute(t *testing.T) {
	h, seen := recorder(t)
	srv := httptest.NewServer(h)
	defer srv.Close()
	c, err := New(srv.URL, WithBearer("t"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	called := map[string]bool{}
	for pattern, methods := range routes {
		for _, m := range methods {
			call := calls[m]
			if call == nil {
				t.Errorf("%s (%s) is not called by this test: add it to calls", m, pattern)
				continue
			}
			called[m] = true
			if err := call(ctx, c); err != nil {
				t.Errorf("%s: %v", m, err)
			}
			hits := seen()
			if len(hits) != 1 || hits[0].pattern != pattern {
				t.Errorf("%s sent %v; want one request matching %q", m, hits, pattern)
				continue
			}
			for i, v := range hits[0].values {
				if want := id + []string{"", "2", "3"}[i]; v != want {
					t.Errorf("%s: path value %d arrived as %q, want %q", m, i, v, want)
				}
			}
		}
	}
	for m := range calls {
		if !called[m] {
			t.Errorf("calls has %s, which no row of the route table names", m)
		}
	}
}

// A pattern that is not the API's, or path values that do not fit it, is
// refused before anything is sent.
func TestExpandRefusesWhatIsNoRoute(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		args    []string
	}{
		{"GET /v1/nothing", nil},
		{"GET /v1/sessions/{id}", nil},
		{"GET /v1/sessions/{id}", []string{""}},
		{"GET /v1/sessions/{id}", []string{"a", "b"}},
	} {
		if _, _, err := expand(tc.pattern, tc.args); err == nil {
			t.Errorf("expand(%q, %q) = nil error", tc.pattern, tc.args)
		}
	}
	var ae *Error
	c, _ := New("http://127.0.0.1:1")
	if _, err := c.Session(context.Background(), ""); err == nil || errors.As(err, &ae) {
		t.Errorf("an empty session id: %v", err)
	}
}

// A path value is one segment whatever it holds: "/", "?" and "#" are
// escaped, and so are "." and "..", which url.PathEscape leaves as they
// are and a server's mux would clean away into another route
// (…/submissions/.. is GET /v1/sessions/{id}).
func TestExpandKeepsEachValueOneSegment(t *testing.T) {
	for args, want := range map[[2]string]string{
		{"s", ".."}:    "/v1/sessions/s/submissions/%2E%2E",
		{".", "x"}:     "/v1/sessions/%2E/submissions/x",
		{"a/b", "c?d"}: "/v1/sessions/a%2Fb/submissions/c%3Fd",
		{"...", "x#y"}: "/v1/sessions/.../submissions/x%23y",
	} {
		_, path, err := expand("GET /v1/sessions/{id}/submissions/{sid}", args[:])
		if err != nil || path != want {
			t.Errorf("expand(%q) = %q, %v; want %q", args, path, err, want)
		}
	}
}
