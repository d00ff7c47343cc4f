// Package stack is cairn's AWS deployment as one CDK stack: the DynamoDB
// journal table and the claim-check bucket, one SQS FIFO queue (with a DLQ)
// per phase and for workflows, the Lambda functions (api, model, tools,
// commit, repair, workflow, isolate) from dist/<name>/bootstrap, the HTTP
// API, the repair schedule, the EventBridge Scheduler group for workflow
// schedules, the Fargate sandboxes in a VPC without NAT, the alarms and a
// dashboard; optionally trace export (tracing.go).
//
// It owns the deployment's shape and its promises (least privilege, no
// NAT, DLQ on every queue, …); the tests in this package assert them on the
// synthesized template. It imports only the CDK: names the runtime reads
// are repeated in names.go and checked against the runtime's source by a
// test, so the runtime's build never compiles CDK and vice versa.
//
// # Usage
//
//	app := awscdk.NewApp(nil)
//	props, err := stack.FromContext(func(k string) string { … app.Node().TryGetContext(&k) … })
//	_, err = stack.New(app, "cairn-dev", props)
//	app.Synth(nil)
package stack
