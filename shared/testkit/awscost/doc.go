// Package awscost counts the AWS API calls a benchmark makes and prices
// them: the figures of docs/PERFORMANCE.md for cairn's orchestration cost
// per million agent steps on the AWS backend, next to Step Functions
// Standard for the same turn shape. Tests and benchmarks only.
//
// CallCounter counts calls by "Service.Operation" through an SDK
// middleware (one count per logical call; SDK retries are not counted);
// CostReport prices the counts at the list prices of PricesDate.
//
// It may import only the standard library and the AWS SDK (with smithy-go's
// middleware).
//
// # Usage
//
//	var counter awscost.CallCounter
//	counter.Instrument(&awsCfg) // before making the clients
//	... run the benchmark's turns ...
//	total, sfn := awscost.CostReport(os.Stdout, counter.Snapshot(), invocations, steps, 2)
package awscost
