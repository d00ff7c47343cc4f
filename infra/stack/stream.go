package stack

import (
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
)

// addStream: the stream function (functions/stream) behind a function URL
// of its own — the event streams as server-sent events, which API Gateway
// cannot carry (it delivers a response whole; the api function long-polls
// instead and answers an event-stream request 406).
//
// The URL's AuthType is AWS_IAM: a caller signs with SigV4 for the service
// "lambda" and needs lambda:InvokeFunctionUrl (and lambda:InvokeFunction)
// on the function, granted by its own identity policy — the stack grants
// no one. The function reads the caller's ARN from the URL's authorizer
// context and names it exactly as the api function names the same IAM
// caller, with the same operators: a principal streams only its own
// sessions. InvokeMode is RESPONSE_STREAM: lambdaurl streams the body as
// it is written. No CORS: a browser's EventSource cannot sign a request,
// so browsers (the console) long-poll through the API, and signing
// clients (Go, the CLI) use this URL. With a JWT authorizer on the API
// (jwtIssuer) the URL still takes IAM callers only.
//
// Its environment is the table and the bucket it reads (and the
// operators): no queue URLs — it sends nothing — and its role may only
// read (grantStream).
func (s *Stack) addStream() {
	env := map[string]*string{EnvTable: s.Table.TableName(), EnvBucket: s.Bucket.BucketName()}
	if len(s.Props.Operators) > 0 {
		env[EnvOperators] = jsii.String(strings.Join(s.Props.Operators, ","))
	}
	fn := s.function(FnStream, env, false)
	s.StreamURL = fn.AddFunctionUrl(&awslambda.FunctionUrlOptions{
		AuthType:   awslambda.FunctionUrlAuthType_AWS_IAM,
		InvokeMode: awslambda.InvokeMode_RESPONSE_STREAM,
	})
}

// grantStream: the stream function reads a session, its submissions and
// their events (shared/aws/dynamo GetItem and Query, the LSI of events
// among the table's indexes) and claim-checked bodies (s3blob GetObject;
// ListBucket so that a missing key is a 404, not a 403). Nothing else: no
// write, no queue, no secret.
func (s *Stack) grantStream() {
	role := s.Roles[FnStream]
	role.AddToPrincipalPolicy(statement("ReadJournal", []string{"dynamodb:GetItem", "dynamodb:Query"},
		[]*string{s.Table.TableArn(), jsii.String(*s.Table.TableArn() + "/index/*")}))
	role.AddToPrincipalPolicy(statement("ReadClaimChecks", []string{"s3:GetObject"}, []*string{s.Bucket.ArnForObjects(jsii.String("*"))}))
	role.AddToPrincipalPolicy(statement("ClaimCheckMisses", []string{"s3:ListBucket"}, []*string{s.Bucket.BucketArn()}))
}
