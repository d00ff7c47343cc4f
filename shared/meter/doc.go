// Package meter tallies the orchestration a turn's handler runs use
// (DynamoDB request units, SQS and S3 requests, Lambda invocations and
// GB-seconds) and records it, priced, in the turn's terminal record, with
// no write of its own and without growing the running record (whose every
// write is copied to an index). Start puts a Tally in a handler run's
// context, starting from what the run's message carried (the AWS backend
// does, per message and per API request; embedded runs none, and then
// every function here is a no-op); Add is how the AWS SDK middleware
// (shared/aws/awsmeter) reports calls; Carry hands the run's usage on in
// the next message of the turn (Engine.Enqueue); Fold records it in the
// terminal write (the journal's), and in the writes of a turn that waits
// without a message (parked for an approval, its cancel requested), so
// the API request that decides or cancels it counts too.
//
// The terminal write's own units are known only after it: Fold charges an
// estimate (the largest single write seen in the run, at least one unit).
// Usage carried by a message that is lost (a repair re-drive starts from
// nothing) is not counted, nor the API request that queued a turn behind
// another (it sends no message); a batch of messages counts one
// invocation per message: the figure is an estimate.
//
// It may import shared/contracts, shared/pricing and the standard library.
package meter
