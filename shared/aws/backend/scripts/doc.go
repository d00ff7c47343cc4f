// Package scripts is the workflow function's part of the AWS backend:
// where workflow scripts are evaluated — the isolate Lambda
// (lambdainvoke), or a local `cairn isolate` command (cairn dev --backend
// aws, tests). Only a main that names it links the invoker:
//
//	rt, err := backend.Boot(ctx, os.Getenv, log, backend.Serves{Evaluator: scripts.Evaluator})
//
// It may import shared/aws/backend, shared/contracts, shared/workflow/isolate,
// shared/workflow/isolate/lambdainvoke, the standard library and the AWS SDK.
package scripts
