// Package api is cairn's HTTP API v1: one net/http Handler served by
// `cairn dev` on loopback and by the `api` Lambda behind API Gateway.
//
// Every error is JSON {"error":{"code","message"}} with a 4xx for bad
// input (never a 5xx, never a stored half-record); bodies over 1 MiB and
// prompts over 256 KiB are refused.
//
// Every request but GET /healthz is made by a principal: Config.Authenticate
// finds it (a bearer token's, shared/auth, locally; the API Gateway
// authorizer's caller on AWS) in the one wrapper every route goes through
// (auth), which puts it in the request's context or answers 401. A
// principal sees and acts on only what it owns (owner.go): a session,
// workflow, run or schedule of another is 404, exactly as one that does not
// exist, so ids do not leak; lists hold only the principal's own. An
// operator may read (and cancel) everything, and act in nothing of
// another's (403). What a principal creates is its: Session.Owner,
// Workflow.Owner, WorkflowRun.Owner are its name. Every route is
// registered through one router, so Routes lists them all and the
// owner-check test walks every one.
//
// Bad input is refused before anything is stored (input.go): a body must
// be one JSON object with no unknown fields, no null where the field is an
// object, list, string or number, and no string (key or value) that is
// invalid UTF-8 or escapes a lone surrogate — encoding/json would quietly
// replace it with U+FFFD, so the raw bytes are checked and the message
// names the field ("tools[1].name"). Paths and query values must be UTF-8
// and short; every number that becomes a count or a duration is bounded
// (turn.CheckSpec; ?wait= at most MaxWait, 25 s, below the api function's
// 29 s behind API Gateway).
//
// Every list route is paginated (page.go): ?limit= (1–100) and an opaque
// ?cursor= (the previous page's next_cursor; "" on the last page). Lists
// hold summaries (prompts, results and errors cut to PreviewBytes, no
// scripts or inputs) and a page also ends at MaxPageBytes as the Lambda
// envelope counts them, so no response exceeds the api function's 6 MB;
// big bodies are read one by one. The stores only answer "the first n":
// a page reads up to cursor offset + limit + 1 records and finds its place
// by the cursor's key.
//
// The web console (shared/console) is mounted at /console/, beside the
// routes: it reads and acts through them, in process, as the browser's
// principal.
//
// It may import shared/console, shared/contracts, shared/ids, shared/policy, shared/telemetry,
// shared/turn and the standard library (/v1/mcp is served by Config.MCP, built elsewhere:
// the MCP SDK is linked only where it is served).
//
// # Usage
//
//	h := api.New(api.Config{Engine: eng, Journal: j, Transcript: t, Events: ev, Registry: reg, Authenticate: tokens.Request})
//	http.ListenAndServe("127.0.0.1:8080", h)
package api
