// Command infra is cairn's CDK app. Run it directly to synthesize offline
// (no AWS credentials, no lookups: the stack is environment-agnostic):
//
//	go run . [key=value …]        # writes ./cdk.out (or $CDK_OUTDIR)
//
// or through the CDK CLI (cdk.json), which passes `-c key=value` context.
// Keys: stage (dev|prod), prefix, assets, imageContext, sandboxImage,
// sandboxes (fargate|lambda), network (private|public), jwtIssuer, jwtAudience, alarmEmail,
// anthropicKeySecretArn, openaiKeySecretArn, defaultModel, endpointAzs,
// throttleRate, throttleBurst, apiConcurrency, modelConcurrency,
// toolsConcurrency, commitConcurrency, workflowConcurrency,
// isolateConcurrency, streamConcurrency, accountConcurrency (docs/DEPLOY.md); tracing
// (off|adot|otlp), adotLayerArn, otlpEndpoint (README.md).
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/cairnrun/cairn/infra/stack"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "infra:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	ctx := map[string]interface{}{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return fmt.Errorf("argument %q: want key=value (CDK context)", a)
		}
		ctx[k] = v
	}
	outdir := os.Getenv("CDK_OUTDIR") // set by the CDK CLI
	if outdir == "" {
		outdir = "cdk.out"
	}
	ctx["aws:cdk:disable-stack-trace"] = true // no construct stack traces in the assembly
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(outdir), Context: &ctx})
	props, err := stack.FromContext(func(key string) string {
		v := app.Node().TryGetContext(jsii.String(key))
		if v == nil {
			return ""
		}
		return fmt.Sprint(v)
	})
	if err != nil {
		return err
	}
	if props.Stage == "" {
		props.Stage = stack.Dev
	}
	name := "cairn-" + string(props.Stage)
	if props.Prefix != "" {
		name = props.Prefix
	}
	if _, err := stack.New(app, name, props); err != nil {
		return err
	}
	app.Synth(nil)
	fmt.Fprintf(os.Stderr, "infra: synthesized stack %s into %s\n", name, outdir)
	return nil
}
