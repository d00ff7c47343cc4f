// Command isolate is the workflow-script isolate as a Lambda: the same
// evaluation as `cairn isolate`, in a function whose role allows nothing
// and whose environment it empties on the first invocation.
//
// It may import shared/workflow/isolate, the standard library and
// aws-lambda-go.
package main

import (
	"os"
	"strconv"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/cairnrun/cairn/shared/workflow/isolate"
)

func main() {
	mem, _ := strconv.Atoi(os.Getenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE"))
	h := &isolate.LambdaHandler{Limits: isolate.Limits{MemoryMiB: mem}, ClearEnv: true}
	lambda.Start(h.Handle)
}
