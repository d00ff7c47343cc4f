// Package console is cairn's web console, served by the API at /console/:
// server-rendered html/template pages with a little vanilla JavaScript and
// CSS, all embedded (no CDN, no build step, works offline).
//
// The console holds no data and no authority of its own. Every page reads
// through the API itself, in process: it builds a request to a /v1 route
// on the API's handler (Config.API) with the browser request's context —
// on AWS that context carries the API Gateway authorizer's caller — and
// its credentials, and decodes the JSON answer; every action (approve or
// deny, cancel, retry, submit, fork, cancel a run, pause or resume a
// schedule) is a POST to the API's own route. So the console enforces
// exactly the API's authorization: another principal's session is the
// API's 404, shown as a 404 page; an operator sees what the API lets it
// read and gets the API's 403 where it may not act.
//
// Credentials. Locally the API takes a bearer token: GET /console/login
// shows a form for it, POST /console/login (or GET /console/login?token=…,
// then a redirect that drops the token from the address) checks it with
// GET /v1/principal and keeps it in an HttpOnly, SameSite=Strict cookie
// scoped to /console/; each in-process call then carries it as the
// Authorization: Bearer header (an Authorization header the request
// already has wins: a signing proxy's). A page whose API call answers 401
// redirects to the login page. On AWS the principal is the authorizer's,
// from the request context, as for every route (docs/DEPLOY.md).
//
// Every POST is checked by http.CrossOriginProtection (Sec-Fetch-Site, else
// Origin against Host): a cross-site form post is refused with 403 before
// anything is called, on top of the SameSite=Strict cookie. A login link
// opened from another site (GET ?token= with Sec-Fetch-Site cross-site or
// same-site) sets no cookie. Pages send a Content-Security-Policy that
// allows only the console's own scripts and styles.
//
// Pages keep stable DOM hooks (ids, classes and data- attributes) for
// browser tests; the list is in docs/ARCHITECTURE.md, "Console". The
// transcript tree nests at branch points: a node with one child is followed
// by it in the same list; a node with several holds ul.branches with one
// li.branch (a list of its own) per child; every li.node names its parent
// in data-parent.
//
// It may import shared/contracts, shared/ids (the id of a run a
// run_workflow call started), shared/workflow/schedule (a schedule's next
// firing) and the standard library.
//
// # Usage
//
//	mux.Handle("/console/", console.New(console.Config{API: apiHandler, Log: log}))
package console
