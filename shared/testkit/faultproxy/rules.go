package faultproxy

import (
	"bytes"
	"slices"
	"sync/atomic"
)

// DynamoWrites are the DynamoDB operations that write.
var DynamoWrites = []string{"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}

// SQSWrites are the SQS operations that change a queue.
var SQSWrites = []string{"SendMessage", "SendMessageBatch", "DeleteMessage", "DeleteMessageBatch", "ChangeMessageVisibility", "ChangeMessageVisibilityBatch"}

// S3Writes are the HTTP methods of S3's object writes (PutObject,
// DeleteObject, multipart parts and completions).
var S3Writes = []string{"PUT", "POST", "DELETE"}

// Ops matches requests whose Op is one of ops.
func Ops(ops ...string) func(Request) bool {
	return func(r Request) bool { return slices.Contains(ops, r.Op) }
}

// BodyContains matches requests whose body contains s.
func BodyContains(s string) func(Request) bool {
	return func(r Request) bool { return bytes.Contains(r.Body, []byte(s)) }
}

// All matches requests every one of match matches.
func All(match ...func(Request) bool) func(Request) bool {
	return func(r Request) bool {
		for _, m := range match {
			if !m(r) {
				return false
			}
		}
		return true
	}
}

// Any matches requests one of match matches.
func Any(match ...func(Request) bool) func(Request) bool {
	return func(r Request) bool {
		return slices.ContainsFunc(match, func(m func(Request) bool) bool { return m(r) })
	}
}

// FirstAttempt loses the answer of the first attempt of every SDK call
// match matches, taking the actions in turn (Drop when none are given);
// the retries pass. Each such call is applied once by the endpoint and then
// retried by the SDK, which meets its own first attempt's effect.
func FirstAttempt(match func(Request) bool, actions ...Action) Rule {
	return Attempts(1, match, actions...)
}

// Attempts loses the answers of attempts 1…n of every SDK call match
// matches, taking the actions in turn (Drop when none are given); later
// attempts pass.
func Attempts(n int, match func(Request) bool, actions ...Action) Rule {
	if len(actions) == 0 {
		actions = []Action{Drop}
	}
	var k atomic.Int64
	return func(r Request) Action {
		if r.Attempt > n || !match(r) {
			return Pass
		}
		return actions[(k.Add(1)-1)%int64(len(actions))]
	}
}

// Once loses the answer of the first request match matches (its first
// attempt, if it comes from the SDK) with action, and passes everything
// else.
func Once(match func(Request) bool, action Action) Rule {
	var done atomic.Bool
	return func(r Request) Action {
		if r.Attempt == 1 && match(r) && done.CompareAndSwap(false, true) {
			return action
		}
		return Pass
	}
}
