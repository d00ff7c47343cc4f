package lambdafn_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/cairnrun/cairn/shared/aws/lambdafn"
	"github.com/cairnrun/cairn/shared/contracts"
)

// childEnv marks the process TestLogLinesCarryRequestID starts.
const childEnv = "CAIRN_LAMBDAFN_LOG_CHILD"

// The functions log through aws-lambda-go's lambdacontext handler (see
// functions/*/main.go): a line logged with an invocation's context, as
// SQSHandler logs, carries that invocation's request id. The handler reads
// AWS_LAMBDA_LOG_FORMAT and AWS_LAMBDA_LOG_LEVEL from the environment when
// its package initialises and writes to os.Stdout, so the test runs itself
// as a child process with the logging environment Lambda gives the
// functions (infra/stack: JSON, INFO) instead of mutating its own.
func TestLogLinesCarryRequestID(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		logAsLambda()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestLogLinesCarryRequestID$")
	cmd.Env = append(os.Environ(), childEnv+"=1", "AWS_LAMBDA_LOG_FORMAT=JSON", "AWS_LAMBDA_LOG_LEVEL=INFO")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s%s", err, out, stderr.String())
	}
	byMessage := map[string]map[string]any{}
	for _, line := range logLines(t, bytes.NewBuffer(out)) {
		msg, _ := line["message"].(string) // Lambda's key, not slog's "msg"
		byMessage[msg] = line
	}
	tests := []struct {
		message   string
		wantLevel string
		wantID    any // nil: no requestId
	}{
		{"in an invocation", "INFO", "req-1"},
		{refusal, "ERROR", "req-1"},
		{"outside an invocation", "INFO", nil},
	}
	for _, tc := range tests {
		line, ok := byMessage[tc.message]
		if !ok {
			t.Errorf("no line %q in the output:\n%s", tc.message, out)
			continue
		}
		if line["level"] != tc.wantLevel || line["requestId"] != tc.wantID {
			t.Errorf("line %q: level %v, requestId %v; want %v, %v (%v)", tc.message, line["level"], line["requestId"], tc.wantLevel, tc.wantID, line)
		}
		if _, ok := line["timestamp"]; !ok {
			t.Errorf("line %q has no timestamp: %v", tc.message, line)
		}
	}
	if _, ok := byMessage["below the level"]; ok {
		t.Errorf("a DEBUG line was written at AWS_LAMBDA_LOG_LEVEL=INFO:\n%s", out)
	}
}

// refusal is SQSHandler's line for a message of another kind.
const refusal = "refusing a message of another kind: reported as a batch item failure with the rest of the batch; SQS moves it to the queue's DLQ after maxReceiveCount"

// logAsLambda writes the lines the parent test checks, as a function does.
func logAsLambda() {
	log := lambdacontext.NewLogger()
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-1"})
	log.InfoContext(ctx, "in an invocation")
	log.DebugContext(ctx, "below the level")
	h := lambdafn.SQSHandler(contracts.QueueModel, func(context.Context, contracts.Message) error { return nil }, log)
	_, _ = h(ctx, events.SQSEvent{Records: []events.SQSMessage{kindRecord(contracts.QueueTools, 1)}})
	log.InfoContext(context.Background(), "outside an invocation")
}
