// Package sandboxes is the tools function's part of the AWS backend: the
// Fargate sandbox provider (ECS RunTask, EC2 for the public network, the
// sandbox token key from Secrets Manager, workspace snapshots). Only a
// main that names it links ECS:
//
//	rt, err := backend.Boot(ctx, os.Getenv, log, backend.Serves{Sandboxes: sandboxes.Fargate})
//
// It may import shared/aws/backend, shared/contracts, shared/sandbox/fargate, shared/sandbox/local,
// shared/sandbox/placement, shared/sandbox/snapshot, shared/secrets, the
// standard library and the AWS SDK.
package sandboxes
