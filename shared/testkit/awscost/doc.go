// Package awscost counts the AWS API calls a benchmark makes and prices
// them: the figures of docs/PERFORMANCE.md for cairn's orchestration cost
// per million agent steps on the AWS backend, next to Step Functions
// Standard for the same turn shape. Tests and benchmarks only.
//
// CallCounter counts calls by "Service.Operation" through an SDK
// middleware (one count per logical call; SDK retries are not counted).
// Its Meter, when set, prices every DynamoDB call in request units from
// the items themselves (units.go: item size, 1 KB per write unit and 4 KB
// per read unit, and every GSI/LSI copy a write lands in, read from
// DescribeTable), since moto and LocalStack return a fixed
// ConsumedCapacity. Report prices calls and units at the list prices of
// PricesDate and prints them per agent step, also by DynamoDB item kind.
//
// It may import only the standard library and the AWS SDK (with smithy-go's
// middleware).
//
// # Usage
//
//	counter := awscost.CallCounter{Meter: &awscost.Meter{DB: uncountedDynamoClient}}
//	counter.Instrument(&awsCfg) // before making the clients
//	... run the benchmark's turns ...
//	r := awscost.Report{Calls: counter.Snapshot(), Units: counter.Meter.ByOp(), Kinds: counter.Meter.ByKind(),
//		Invocations: invocations, Steps: steps, PhasesPerStep: 2}
//	cost := r.Print(os.Stdout)
package awscost
