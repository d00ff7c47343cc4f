// Package api is cairn's HTTP API v1: one net/http Handler served by
// `cairn dev` on loopback and by the `api` Lambda behind API Gateway.
//
// Every error is JSON {"error":{"code","message"}} with a 4xx for bad
// input (never a 5xx, never a stored half-record); bodies over 1 MiB and
// prompts over 256 KiB are refused. Requests carry `Authorization: Bearer
// <token>` when a token is configured.
//
// It may import shared/contracts, shared/ids, shared/policy, shared/turn and
// the standard library.
//
// # Usage
//
//	h := api.New(api.Config{Engine: eng, Journal: j, Transcript: t, Events: ev, Registry: reg, Token: tok})
//	http.ListenAndServe("127.0.0.1:8080", h)
package api
