package awsmeter

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/meter"
)

// Instrument adds the middleware to cfg: every client made from it
// reports to the Tally of its call's context.
func Instrument(cfg *aws.Config) {
	cfg.APIOptions = append(cfg.APIOptions, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("cairnMeter",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				svc, op := awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx)
				if svc == "DynamoDB" {
					askUnits(in.Parameters)
				}
				out, meta, err := next.HandleInitialize(ctx, in)
				meter.Add(ctx, Usage(svc, op, out.Result, err))
				return out, meta, err
			}), middleware.After)
	})
}

// askUnits makes an item call report the units it consumed.
func askUnits(params any) {
	total := types.ReturnConsumedCapacityTotal
	switch in := params.(type) {
	case *dynamodb.PutItemInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.UpdateItemInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.DeleteItemInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.GetItemInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.QueryInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.ScanInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.BatchGetItemInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.BatchWriteItemInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.TransactWriteItemsInput:
		in.ReturnConsumedCapacity = total
	case *dynamodb.TransactGetItemsInput:
		in.ReturnConsumedCapacity = total
	}
}

func units(cc *types.ConsumedCapacity) float64 {
	if cc == nil || cc.CapacityUnits == nil {
		return 0
	}
	return *cc.CapacityUnits
}

func sum(ccs []types.ConsumedCapacity) float64 {
	var n float64
	for i := range ccs {
		n += units(&ccs[i])
	}
	return n
}

// Usage is what one call used (svc and op as the SDK names them; result
// the operation's output, nil on error).
func Usage(svc, op string, result any, err error) contracts.Orchestration {
	var o contracts.Orchestration
	switch svc {
	case "DynamoDB":
		switch out := result.(type) {
		case *dynamodb.PutItemOutput:
			o.DynamoWriteUnits = units(out.ConsumedCapacity)
		case *dynamodb.UpdateItemOutput:
			o.DynamoWriteUnits = units(out.ConsumedCapacity)
		case *dynamodb.DeleteItemOutput:
			o.DynamoWriteUnits = units(out.ConsumedCapacity)
		case *dynamodb.BatchWriteItemOutput:
			o.DynamoWriteUnits = sum(out.ConsumedCapacity)
		case *dynamodb.TransactWriteItemsOutput:
			o.DynamoWriteUnits = sum(out.ConsumedCapacity)
		case *dynamodb.GetItemOutput:
			o.DynamoReadUnits = units(out.ConsumedCapacity)
		case *dynamodb.QueryOutput:
			o.DynamoReadUnits = units(out.ConsumedCapacity)
		case *dynamodb.ScanOutput:
			o.DynamoReadUnits = units(out.ConsumedCapacity)
		case *dynamodb.BatchGetItemOutput:
			o.DynamoReadUnits = sum(out.ConsumedCapacity)
		case *dynamodb.TransactGetItemsOutput:
			o.DynamoReadUnits = sum(out.ConsumedCapacity)
		}
		var ccf *types.ConditionalCheckFailedException
		var tx *types.TransactionCanceledException
		if errors.As(err, &ccf) || errors.As(err, &tx) {
			o.DynamoWriteUnits = 1 // charged, not reported
		}
	case "S3":
		switch op {
		case "PutObject", "CopyObject", "ListObjectsV2", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload":
			o.BlobPuts = 1
		case "GetObject", "HeadObject":
			o.BlobGets = 1
		}
	case "SQS":
		switch op {
		case "ChangeMessageVisibility", "ChangeMessageVisibilityBatch", "GetQueueAttributes":
			o.QueueRequests = 1
		}
	case "Lambda":
		if op == "Invoke" {
			o.Invocations = 1
		}
	}
	return o
}
