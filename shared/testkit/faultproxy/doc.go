// Package faultproxy is a reverse proxy for tests that stands between an
// AWS SDK client and its endpoint (moto, LocalStack) and loses chosen
// answers: the request reaches the endpoint and is applied there, and then
// the response is dropped, reset, replaced by a 500 or withheld, so the
// SDK's retryer sends the same request again and meets the effect of its
// own first attempt. That is how a conditional write whose answer was lost
// comes back as "the condition failed".
//
// A Rule decides the fate of each request from what the proxy parses out
// of it: the operation (X-Amz-Target, e.g. "DynamoDB_20120810.PutItem" →
// "PutItem"; the HTTP method for REST services such as S3), the SDK's
// attempt number (header amz-sdk-request: attempt=N) and invocation id
// (amz-sdk-invocation-id, one per logical call across its retries), and
// the body. Every request is logged with its action and the endpoint's
// status and error type, so a test can assert that faults were injected,
// that the SDK retried each of them, and what the retries met.
//
// It may import only the standard library.
//
// # Usage
//
//	p, err := faultproxy.New(endpoint, faultproxy.FirstAttempt(faultproxy.Ops(faultproxy.DynamoWrites...),
//		faultproxy.Drop, faultproxy.Reset, faultproxy.ServerError))
//	defer p.Close()
//	cfg.BaseEndpoint = aws.String(p.URL())     // the SDK client now talks through the proxy
//	...
//	for _, f := range p.Unretried() { t.Errorf("fault on %s never retried", f.Op) }
package faultproxy
