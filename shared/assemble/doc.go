// Package assemble is cairn's construction seam: New wires a backend's
// ports into the turn engine, the workflow driver, the repairer, the queue
// workers and the HTTP API. Backends only make ports — the embedded
// backend (shared/embedded/backend: SQLite, local sandboxes) for `cairn
// dev`/`cairn run`, and the AWS backend (shared/aws/backend: DynamoDB, S3,
// SQS) for the Lambda functions — so a Lambda binary never links the
// embedded adapters.
//
// It may import shared/api, shared/contracts, shared/pricing, shared/repair, shared/turn,
// shared/worker, shared/workflow, shared/workflow/schedule,
// shared/workflow/script and the standard library.
//
// # Usage
//
//	rt, err := assemble.New(ports, assemble.Config{Owner: "boot-1", Authenticate: tokens.Request})
//	go rt.Serve(ctx)                       // workers + repair ticker
//	http.ListenAndServe(addr, rt.API)
package assemble
