// Package fargate is the "fargate" sandbox kind (docs/DESIGN.md §6): each
// session's sandbox is sandboxd in an ECS task on Fargate. On the public
// network (Config.Network, the AWS deployment's default) the task gets a
// public IP (assignPublicIp ENABLED), read from its ENI with EC2's
// DescribeNetworkInterfaces (NewEC2), and sandboxd serves TLS with a key
// and self-signed certificate made for that task alone (placement.NewCert,
// SANDBOXD_TLS_CERT/KEY overrides); the record keeps the certificate's
// SHA-256 (CertSHA256) and every client pins it (remote.Options). On the
// private network it is spoken to over HTTP at the task's private IP
// (or pinned TLS too, with Config.TLS). A spec's network "internet" runs
// with InternetSecurityGroups, on the public network only (Check).
//
// Acquire reconnects when the session's record names a "fargate" task with
// the spec's fingerprint that ECS reports RUNNING and that answers with its
// token. Otherwise it stops the old task (if any), runs a new one
// (launch type FARGATE, awsvpc, the token's SHA-256 and
// the idle timeout — and the spec's limits, SANDBOXD_LIMITS, when it sets
// any, and the TLS identity with TLS — as container environment overrides, CPU/memory task
// overrides when the spec sets them, tagged with the session id), waits for
// RUNNING, reads the ENI's private IPv4 address, health-checks sandboxd and
// records {Kind, ID task ARN, Endpoint, TokenRef, Fingerprint, StartedAt} on
// the session, so any later phase in any process reconnects.
//
// Two processes acquiring one session at once may both run a task; the
// conditional session write (placement.Replace) picks the winner, and the
// loser stops its own task and reconnects to the winner's. The bearer token
// is derived from the record with the deployment key and never logged; ECS
// sees only its hash. Idle tasks stop themselves (sandboxd reads its idle
// timeout from SANDBOXD_IDLE_TIMEOUT, set per task);
// Release stops the task and clears the record. Files live in the task and
// die with it: a replaced task starts with an empty workspace.
//
// It may import shared/contracts, shared/sandbox/placement,
// shared/sandbox/snapshot (Config.Snapshots),
// shared/sandbox/remote, the standard library, the ECS client and the
// SigV4 signer of aws-sdk-go-v2 and smithy.
//
// # Usage
//
//	p, err := fargate.New(fargate.Config{
//		ECS:            ecs.NewFromConfig(awsCfg),
//		Cluster:        "cairn",
//		TaskDefinition: "cairn-sandboxd",
//		Container:      "sandboxd",
//		Subnets:        []string{"subnet-0abc"},
//		SecurityGroups: []string{"sg-0def"},
//		Sessions:       journal,
//		Tokens:         placement.Tokens{Key: key},
//		Log:            log,
//	})
//	if err != nil {
//		return err
//	}
//	sb, err := p.Acquire(ctx, sessionID, contracts.SandboxSpec{Kind: "fargate", CPU: 1024, MemoryMiB: 2048})
package fargate
