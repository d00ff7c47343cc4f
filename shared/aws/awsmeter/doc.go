// Package awsmeter is the AWS SDK middleware that reports each call a
// handler run makes to its shared/meter Tally: DynamoDB request units as
// DynamoDB reports them (it asks for ReturnConsumedCapacity TOTAL on every
// item call; a failed conditional write counts one unit, which DynamoDB
// charges without reporting it), S3 PUTs and GETs, SQS visibility changes
// and Lambda invocations it makes. SQS sends are not counted here: the
// handler run a message wakes counts its send, receive and delete
// (assemble.Config.Meter), so a run's last send is not lost.
//
// It may import shared/contracts, shared/meter, the AWS SDK for Go v2 and
// the standard library.
package awsmeter
