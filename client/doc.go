// Package client is the Go client of cairn's HTTP API v1: one typed
// method per route of shared/api (api.Routes()), the records of
// shared/contracts where the API answers them and small views where it
// wraps them (Page with its next cursor, Session with its pending
// approvals, EventsPage, the list summaries), and followers that hand on
// a turn's or a session's events exactly once each across restarts of
// the server.
//
// An error answer is an *Error (Status, and the Code and Message of its
// {"error":{"code","message"}} body): match it with errors.As.
//
// Where the requests go and how they are authenticated are options of
// New: a bearer token (WithBearer: a local token, a JWT; WithTokenFile:
// DATA/token, re-read when a follower reconnects after a 401), AWS SigV4
// for API Gateway's IAM authorisation (WithSigV4: service execute-api; SSE
// follows on a WithStreamURL, a Lambda function URL, service lambda), an
// http.Handler in this process (WithHandler: cmd/cairn's embedded mode;
// its answers stream, so SSE works there too), WithHTTPClient,
// WithReconnectFor.
//
// Follow hands on a turn's events by long-poll (?after=&wait=) or by
// server-sent events (Last-Event-ID), parsed here with the standard
// library; FollowSession streams every turn of a session. Both reconnect
// when the server goes away — 100 ms doubling to 5 s, for at most
// ReconnectFor — and resume after the last event handed on, so none is
// lost or repeated; Reconnecting is the same rule for any idempotent
// call, and tells an io.Writer about it in one line ("  ↻ lost the server
// (connection refused); reconnecting… reconnected after 1.2s, resuming
// after event 17"), the line `cairn run` prints.
//
// Every method goes through one route table (routes.go: pattern → the
// methods calling it); routes_test.go fails when a route of the API has no
// method, or a method sends anything but its route's method and path.
// Tokens have no route: they live in the data directory (`cairn token`),
// and TokenPath and ReadToken read the owner's DATA/token.
//
// It may import shared/contracts, the standard library and the AWS SDK's
// core module (its aws and aws/signer/v4 packages, no service client). It
// imports no other package of cairn — not the API, not the runtime — but
// in its tests.
//
// # Usage
//
//	c, err := client.New("http://127.0.0.1:8080", client.WithTokenFile(client.TokenPath(data)))
//	sess, err := c.CreateSession(ctx, contracts.SessionSpec{Model: "scripted:demo"})
//	sub, err := c.Submit(ctx, sess.ID, "do the demo", client.SubmitOptions{Key: "demo-1"})
//	end, err := c.Follow(ctx, sess.ID, sub.ID, client.FollowOptions{SSE: true, Progress: os.Stderr},
//		func(ev contracts.Event) error { fmt.Println(ev.Type, ev.Text); return nil })
//	var ae *client.Error
//	if errors.As(err, &ae) && ae.Status == http.StatusNotFound { … }
package client
