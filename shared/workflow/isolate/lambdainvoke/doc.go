// Package lambdainvoke evaluates workflow scripts in the isolate Lambda
// (functions/isolate, docs/DESIGN.md §7) through the Lambda Invoke API: the AWS
// counterpart of isolate.Runner. It is a package of its own so that the
// isolate function itself, and `cairn isolate`, never link the Lambda
// client they do not use (cold starts).
//
// It may import shared/contracts, shared/workflow/isolate (the protocol's
// response decoding), the standard library and the AWS SDK's Lambda client.
//
// # Usage
//
//	client := lambda.NewFromConfig(cfg)
//	var ev contracts.Evaluator = &lambdainvoke.Evaluator{Client: client, Function: "cairn-isolate"}
//	resp, err := ev.Evaluate(ctx, req)
//	// err: the invocation itself failed (throttled, no such function, ctx ended): retry later.
//	// resp.Status == EvalFailed: the script or the function failed (timeout, out of memory, …): the run fails.
package lambdainvoke
