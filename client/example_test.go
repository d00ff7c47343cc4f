package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/cairnrun/cairn/client"
	"github.com/cairnrun/cairn/shared/contracts"
)

// A turn submitted to a cairn API over HTTP and followed to its commit
// as server-sent events. (exampleServer, in fixture_test.go, serves a
// real cairn API on loopback as `cairn dev` does.)
func Example() {
	cairn := exampleServer()
	ctx := context.Background()
	c, err := client.New(cairn.URL, client.WithBearer(cairn.Token))
	if err != nil {
		log.Fatal(err)
	}
	sess, err := c.CreateSession(ctx, contracts.SessionSpec{Model: "scripted:demo"})
	if err != nil {
		log.Fatal(err)
	}
	sub, err := c.Submit(ctx, sess.ID, "do the demo", client.SubmitOptions{Key: "demo-1"})
	if err != nil {
		log.Fatal(err)
	}
	end, err := c.Follow(ctx, sess.ID, sub.ID, client.FollowOptions{SSE: true}, func(ev contracts.Event) error {
		switch ev.Type {
		case contracts.EventToolStarted:
			fmt.Println("→", ev.Tool)
		case contracts.EventCommitted:
			fmt.Println("answer:", ev.Text)
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(end.Phase)
	// Output:
	// → write_file
	// → list_dir
	// → read_file
	// → bash
	// answer: Done: I wrote notes.txt, listed the workspace, read the note back and counted its 2 lines.
	// COMMITTED
}

// In-process: the client calls the runtime's API handler directly, as
// `cairn run` does without --addr; here it long-polls.
func ExampleWithHandler() {
	cairn := exampleServer()
	ctx := context.Background()
	c, err := client.New("", client.WithHandler(cairn.RT.API), client.WithBearer(cairn.Token))
	if err != nil {
		log.Fatal(err)
	}
	sess, err := c.CreateSession(ctx, contracts.SessionSpec{Model: "scripted:plain"})
	if err != nil {
		log.Fatal(err)
	}
	sub, err := c.Submit(ctx, sess.ID, "hello", client.SubmitOptions{})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.Follow(ctx, sess.ID, sub.ID, client.FollowOptions{}, func(contracts.Event) error { return nil }); err != nil {
		log.Fatal(err)
	}
	done, err := c.Submission(ctx, sess.ID, sub.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(done.Phase, done.Result)
	// Output: COMMITTED Hello from cairn's scripted model. You said: hello
}

// A tool call the session's policy asks about parks the turn; the
// approval is listed and allowed, and the turn goes on to its commit.
func ExampleClient_Decide() {
	cairn := exampleServer()
	ctx := context.Background()
	c, _ := client.New(cairn.URL, client.WithBearer(cairn.Token))
	sess, err := c.CreateSession(ctx, contracts.SessionSpec{Model: "scripted:approval",
		Policy: contracts.Policy{Tools: map[string]contracts.Decision{"bash": contracts.Ask}}})
	if err != nil {
		log.Fatal(err)
	}
	sub, err := c.Submit(ctx, sess.ID, "needs approval", client.SubmitOptions{})
	if err != nil {
		log.Fatal(err)
	}
	parked, err := c.Follow(ctx, sess.ID, sub.ID, client.FollowOptions{}, func(ev contracts.Event) error {
		if ev.Type == contracts.EventApprovalNeeded {
			return client.ErrStop // stop following here
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	pending, err := c.Approvals(ctx, sess.ID, client.ListOptions{})
	if err != nil {
		log.Fatal(err)
	}
	a := pending.Items[0]
	fmt.Println("asks about", a.Tool)
	if _, err := c.Decide(ctx, sess.ID, a.ID, contracts.Allow, "looks safe"); err != nil {
		log.Fatal(err)
	}
	end, err := c.Follow(ctx, sess.ID, sub.ID, client.FollowOptions{After: parked.Last}, func(ev contracts.Event) error {
		if ev.Type == contracts.EventToolFinished {
			fmt.Println(ev.Tool, "ran")
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(end.Phase)
	// Output:
	// asks about bash
	// bash ran
	// COMMITTED
}

// An error answer of the API is a *client.Error.
func ExampleError() {
	cairn := exampleServer()
	c, _ := client.New(cairn.URL, client.WithBearer(cairn.Token))
	_, err := c.Session(context.Background(), "ses_nope")
	var ae *client.Error
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		fmt.Println(ae.Code)
	}
	// Output: not_found
}

// Every page of a list: a principal sees only its own sessions.
func ExampleAll() {
	cairn := exampleServer()
	ctx := context.Background()
	c, _ := client.New(cairn.URL, client.WithBearer(cairn.AddToken("ci"))) // `cairn token add ci`
	for _, m := range []string{"scripted:plain", "scripted:demo", "scripted:shell"} {
		if _, err := c.CreateSession(ctx, contracts.SessionSpec{Model: m}); err != nil {
			log.Fatal(err)
		}
	}
	for s, err := range client.All(func(cursor string) (client.Page[client.SessionSummary], error) {
		return c.Sessions(ctx, client.ListOptions{Limit: 2, Cursor: cursor})
	}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(s.Owner, s.Model)
	}
	// Output:
	// ci scripted:shell
	// ci scripted:demo
	// ci scripted:plain
}

// A workflow run fans out to agent turns; its nodes and result are read
// back once it ended.
func ExampleClient_StartRun() {
	cairn := exampleServer()
	ctx := context.Background()
	c, _ := client.New(cairn.URL, client.WithBearer(cairn.Token))
	wf, err := c.CreateWorkflow(ctx, "fan", `def main(input):
    rs = wait([start("part " + p, model="scripted:plain", key=p) for p in input["parts"]])
    return [r.ok for r in rs]
`)
	if err != nil {
		log.Fatal(err)
	}
	me, err := c.Principal(ctx)
	if err != nil {
		log.Fatal(err)
	}
	mine, err := c.Workflows(ctx, client.ListOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for _, w := range mine.Items {
		fmt.Printf("workflow %s, owned by the caller: %v\n", w.Name, w.Owner == me.Name)
	}
	run, err := c.StartRun(ctx, wf.ID, client.RunOptions{Input: json.RawMessage(`{"parts":["a","b"]}`), Key: "fan-1"})
	if err != nil {
		log.Fatal(err)
	}
	var v client.RunView
	for v.Status == "" || v.Status == contracts.RunRunning {
		time.Sleep(50 * time.Millisecond) // a run has no event stream: poll it
		if v, err = c.Run(ctx, wf.ID, run.ID, client.ListOptions{}); err != nil {
			log.Fatal(err)
		}
	}
	for _, n := range v.Nodes {
		fmt.Printf("node %s: %s\n", n.Key, n.Result.Output)
	}
	fmt.Println(v.Status, string(v.Result))
	// Output:
	// workflow fan, owned by the caller: true
	// node a: Hello from cairn's scripted model. You said: part a
	// node b: Hello from cairn's scripted model. You said: part b
	// SUCCEEDED [true,true]
}

// Every turn of a session, in order, each followed by its end.
func ExampleClient_FollowSession() {
	cairn := exampleServer()
	ctx := context.Background()
	c, _ := client.New(cairn.URL, client.WithBearer(cairn.Token))
	sess, err := c.CreateSession(ctx, contracts.SessionSpec{Model: "scripted:plain"})
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range []string{"one", "two"} {
		if _, err := c.Submit(ctx, sess.ID, p, client.SubmitOptions{}); err != nil {
			log.Fatal(err)
		}
	}
	turns := 0
	err = c.FollowSession(ctx, sess.ID, client.SessionFollowOptions{}, func(se client.SessionEvent) error {
		switch {
		case se.TurnEnd != nil:
			fmt.Println("turn", se.TurnEnd.Phase)
			if turns++; turns == 2 {
				return client.ErrStop // the stream goes on with later turns: stop after two
			}
		case se.Event.Type == contracts.EventCommitted:
			fmt.Println(se.Event.Text)
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// Hello from cairn's scripted model. You said: one
	// turn COMMITTED
	// Hello from cairn's scripted model. You said: two
	// turn COMMITTED
}

// Requests signed for an IAM-authorised API Gateway (execute-api), and SSE
// follows sent to the streaming function URL (lambda). The server here
// stands in for AWS: it checks each signature and says what it was for.
func ExampleWithSigV4() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		service, region, err := verifySigV4(r, testCreds)
		fmt.Println(r.URL.Path, service, region, err)
		if r.Header.Get("Accept") == "text/event-stream" {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: end\ndata: {\"phase\":\"COMMITTED\"}\n\n")
			return
		}
		fmt.Fprint(w, `{"id":"ses_1"}`)
	}))
	defer srv.Close()
	creds := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return testCreds, nil }) // e.g. config.LoadDefaultConfig's
	c, err := client.New(srv.URL+"/prod", client.WithSigV4(creds, "eu-west-1"), client.WithStreamURL(srv.URL+"/fn"))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Session(ctx, "ses_1"); err != nil {
		log.Fatal(err)
	}
	if _, err := c.Follow(ctx, "ses_1", "sub_1", client.FollowOptions{SSE: true}, func(contracts.Event) error { return nil }); err != nil {
		log.Fatal(err)
	}
	// Output:
	// /prod/v1/sessions/ses_1 execute-api eu-west-1 <nil>
	// /fn/v1/sessions/ses_1/submissions/sub_1/events lambda eu-west-1 <nil>
}

// The raw JSON-RPC passthrough to cairn's MCP endpoint.
func ExampleClient_MCP() {
	cairn := exampleServer()
	c, _ := client.New(cairn.URL, client.WithBearer(cairn.Token))
	msgs, err := c.MCP(context.Background(), json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		log.Fatal(err)
	}
	var resp struct {
		Result struct {
			Tools []struct{ Name string } `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(msgs[0], &resp); err != nil {
		log.Fatal(err)
	}
	for _, t := range resp.Result.Tools {
		fmt.Println(t.Name)
	}
	// Unordered output:
	// run_agent
	// get_result
	// approve
	// cancel
	// run_workflow
}
