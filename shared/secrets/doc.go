// Package secrets resolves a secret by reference, so that a session spec, a
// log line or a Lambda's configuration holds the reference and never the
// secret: "env:NAME" reads the process environment; "secretsmanager:ID" or
// a Secrets Manager ARN reads AWS Secrets Manager (IAM decides who may).
//
// It may import shared/contracts, the standard library and the AWS SDK's
// Secrets Manager client.
//
// # Usage
//
//	r := secrets.Resolver{Getenv: os.Getenv, SecretsManager: secretsmanager.NewFromConfig(cfg)}
//	key, err := r.Resolve(ctx, os.Getenv("CAIRN_SANDBOX_KEY_SECRET"))
package secrets
