// Package api is cairn's HTTP API v1: one net/http Handler served by
// `cairn dev` on loopback and by the `api` Lambda behind API Gateway.
//
// Every error is JSON {"error":{"code","message"}} with a 4xx for bad
// input (never a 5xx, never a stored half-record); bodies over 1 MiB and
// prompts over 256 KiB are refused. Requests carry `Authorization: Bearer
// <token>` when a token is configured (the scheme in any case, RFC 7235).
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
// It may import shared/contracts, shared/ids, shared/policy, shared/turn and
// the standard library.
//
// # Usage
//
//	h := api.New(api.Config{Engine: eng, Journal: j, Transcript: t, Events: ev, Registry: reg, Token: tok})
//	http.ListenAndServe("127.0.0.1:8080", h)
package api
