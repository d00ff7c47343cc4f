// Package testkit is the home of code that exists only for tests and
// benchmarks. No production package imports anything under it (a test in
// docs/ checks `go list -deps` of every function and of cmd/cairn):
//
//	enginetest/   the runtime on SQLite with a manual clock; workflows
//	              evaluated in process; a model provider run through the
//	              real engine (what was modeltest)
//	conformance/  one suite per port, run against every adapter
//	crashpoint/   crash-point injection and the crash matrix
//	awstest/      connecting tests to the LocalStack/moto endpoint
//	awscost/      counting AWS calls and pricing them (the cost benchmark)
//	faultproxy/   a proxy in front of the endpoint that loses answers on the wire
//
// It may import nothing.
package testkit
