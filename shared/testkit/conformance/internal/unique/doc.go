// Package unique gives the conformance suites ids that no other test or
// run uses, so a suite can share one real backend (a DynamoDB table, an
// SQS account) with every other suite.
//
// It may import only the standard library.
package unique
