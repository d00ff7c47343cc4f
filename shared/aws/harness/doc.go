// Package harness runs cairn's Lambda handlers locally exactly as
// Lambda's SQS event source mapping would, against a real SQS endpoint
// (LocalStack, or moto_server in CI): it receives a batch from each
// function's queue, builds the events.SQSEvent Lambda would send, invokes
// the handler with the function timeout as the context deadline, deletes
// every record not listed in the response's BatchItemFailures, and leaves
// the failed ones to reappear after their visibility timeout (and reach the
// DLQ after maxReceiveCount). A handler error, a panic, a timeout or a
// response naming a record not in the batch fails the whole batch, as on
// Lambda. APIEvent builds the API Gateway HTTP API event the api function
// receives, with the authorizer context of an IAM caller (IAM) or a JWT
// (JWT) when given one, so tests act as different principals.
//
// It serves tests and `cairn dev --backend aws`; production uses the real
// event source mapping. It is given the handlers; it never imports them.
//
// It may import only the standard library, the AWS SDK's SQS client and
// aws-lambda-go's event types.
//
// # Usage
//
//	h := &harness.Harness{Client: sqs.NewFromConfig(cfg), Log: logger, Functions: []harness.Function{{
//		Queue: "model", URL: urls["model"], BatchSize: 10, Visibility: 30 * time.Second,
//		Timeout: 15 * time.Minute, Handler: lambdafn.SQSHandler("model", eng.Handle, logger),
//	}}}
//	go h.Run(ctx)
//
//	resp, err := lambdafn.APIHandler(api)(ctx, harness.APIEvent("POST", "/v1/sessions?x=1", hdr, body,
//		harness.IAM("arn:aws:sts::123456789012:assumed-role/Dev/alice")))
package harness
