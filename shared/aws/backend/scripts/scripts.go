package scripts

import (
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/cairnrun/cairn/shared/aws/backend"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/workflow/isolate"
	"github.com/cairnrun/cairn/shared/workflow/isolate/lambdainvoke"
)

var _ backend.EvaluatorFunc = Evaluator

// Evaluator is c.Workflows.Isolate (a local command) when set, else the
// isolate function c.Workflows.IsolateFunction.
func Evaluator(c backend.Config, awsCfg aws.Config) (contracts.Evaluator, error) {
	w := c.Workflows
	switch {
	case len(w.Isolate) > 0:
		return &isolate.Runner{Command: w.Isolate}, nil
	case w.IsolateFunction != "":
		return &lambdainvoke.Evaluator{Client: lambda.NewFromConfig(awsCfg), Function: w.IsolateFunction}, nil
	}
	return nil, errors.New("aws backend: no isolate configured (" + backend.EnvIsolateFunction + ")")
}
