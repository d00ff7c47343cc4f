// Package ownertest checks that principals own their work, over every
// route the API registers (api.Routes): a route added later without an
// owner check fails it.
//
// Run is given an API (Target: an enginetest runtime and a way to call its
// API as each of principals A, B, an operator and nobody) and builds, as
// A, a session whose turn waits on an approval, a workflow with a run that
// ended (and so has a node) and a schedule; as B a session, a workflow and
// a schedule of its own. Then, for every route: with no credentials it is
// 401; a route with path placeholders — {id} (A's session under
// /v1/sessions/, A's workflow under /v1/workflows/), {sid}, {aid}, {rid},
// {nid}, {sch} — filled with A's ids is 404 to B, 200 to the operator when
// it reads (what an operator may change is the route's to say: never a
// 401 or 5xx), and not 404 to A; a list without placeholders shows each principal only
// its own items, the operator both; a create without placeholders records
// its caller as the owner; GET /v1/principal names each caller itself
// (PrincipalRoute). Routes that change something get a fresh set
// of A's records each, so one route's effect never decides another's
// answer. A placeholder Run does not know fails the test: teach it here.
//
// It is for _test.go files only; no production package imports it.
//
// It may import shared/api, shared/testkit/enginetest and the standard
// library (testing included).
//
// # Usage
//
//	h := enginetest.NewConfig(t, assemble.Config{Authenticate: auth}, enginetest.Workflows(&enginetest.InProcess{}, nil))
//	ownertest.Run(t, ownertest.Target{H: h, Name: names, Do: call})
package ownertest
