// Package awstest connects tests to the LocalStack-compatible AWS endpoint
// (LocalStack where Docker exists, moto_server in CI) and namespaces what
// they create so suites never interfere.
//
// The endpoint is $CAIRN_AWS_ENDPOINT, else http://127.0.0.1:4566. When it
// is unreachable a test skips with one clear line — unless CI=true, where
// it fails: CI must never silently skip the AWS suite.
//
// It may import shared/ids, the standard library (testing included) and the
// AWS SDK.
//
// # Usage
//
//	cfg := awstest.Config(t)                  // skips/fails if no endpoint
//	table := awstest.Name(t, "cairn")         // cairn-<random>
//	client := dynamodb.NewFromConfig(cfg)
package awstest
