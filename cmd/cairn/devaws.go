package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairnrun/cairn/shared/auth"
	awsbackend "github.com/cairnrun/cairn/shared/aws/backend"
	"github.com/cairnrun/cairn/shared/aws/backend/all"
	"github.com/cairnrun/cairn/shared/aws/harness"
	"github.com/cairnrun/cairn/shared/aws/lambdafn"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/repair"
)

// cmdDevAWS runs the whole serverless shape against a LocalStack-compatible
// endpoint: the api function fed API Gateway v2 events, the phase functions
// fed SQS batches by the harness, repair on a ticker.
func cmdDevAWS(ctx context.Context, env envDefaults, args []string) error {
	fs := flag.NewFlagSet("dev --backend aws", flag.ContinueOnError)
	endpoint := fs.String("endpoint", firstNonEmpty(lookup(env.Environ, "AWS_ENDPOINT_URL"), "http://127.0.0.1:4566"), "LocalStack-compatible endpoint")
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	var n awsbackend.Names
	fs.StringVar(&n.Table, "table", "cairn", "DynamoDB table")
	fs.StringVar(&n.Bucket, "bucket", "cairn-blobs", "S3 bucket for claim checks")
	fs.StringVar(&n.QueuePrefix, "queue-prefix", "cairn", "queue name prefix")
	sandboxes := fs.String("sandboxes", "", "directory for local sandboxes (default DATA/sandboxes)")
	data := fs.String("data", env.Data, "data directory (token file, sandboxes)")
	token := fs.String("token", env.Token, "the owner's API bearer token (default: DATA/token's, else random)")
	otlp := fs.String("otlp", "", "export traces and metrics over OTLP/HTTP to this endpoint (default: OTEL_EXPORTER_OTLP_ENDPOINT)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	stopTelemetry, err := devTelemetry(ctx, env, *otlp, "cairn-dev-aws")
	if err != nil {
		return err
	}
	defer stopTelemetry()
	if *data == "" {
		*data = defaultData()
	}
	if *sandboxes == "" {
		*sandboxes = *data + "/sandboxes"
	}
	if *token, _, err = serverToken(*data, *token); err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	awsCfg := aws.Config{
		Region:       firstNonEmpty(lookup(env.Environ, "AWS_REGION"), "us-east-1"),
		Credentials:  credentials.NewStaticCredentialsProvider(firstNonEmpty(lookup(env.Environ, "AWS_ACCESS_KEY_ID"), "test"), firstNonEmpty(lookup(env.Environ, "AWS_SECRET_ACCESS_KEY"), "test"), ""),
		BaseEndpoint: aws.String(*endpoint),
	}
	fmt.Printf("provisioning table %s, bucket %s, queues %s-* on %s\n", n.Table, n.Bucket, n.QueuePrefix, *endpoint)
	cfg, err := awsbackend.Provision(ctx, awsCfg, n)
	if err != nil {
		return fmt.Errorf("%w (is LocalStack or moto running? scripts/moto.sh start)", err)
	}
	cfg.SandboxDir, cfg.Log = *sandboxes, log
	if err := keepOwnerToken(*data, *token); err != nil {
		return err
	}
	tokens := auth.Open(*data)
	if cfg.Operators, err = devOperators(tokens, env.getenv(awsbackend.EnvOperators)); err != nil {
		return err
	}
	cfg.Env = []string{"PATH=" + lookup(env.Environ, "PATH")}
	cfg.Getenv = env.getenv
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("locating the cairn binary (it runs the isolate): %w", err)
	}
	cfg.Workflows.Isolate = []string{self, "isolate"}
	cfg.Serves = all.Serves // the harness plays every function in this process
	rt, err := awsbackend.New(ctx, cfg)
	if err != nil {
		return err
	}
	h := &harness.Harness{Client: sqs.NewFromConfig(awsCfg), Log: log}
	// As deployed (infra/stack): each function's timeout, and a visibility
	// timeout of 6× it, so a killed invocation's message would stay in flight
	// that long if the handler did not keep it briefly hidden.
	for _, f := range []struct {
		queue   string
		timeout time.Duration
		batch   int
	}{{contracts.QueueModel, 600 * time.Second, 1}, {contracts.QueueTools, 900 * time.Second, 1},
		{contracts.QueueCommit, 60 * time.Second, 10}, {contracts.QueueWorkflow, 120 * time.Second, 5}} {
		// A receive asks for the handler's own hold only (it re-hides its
		// records at once and keeps them hidden): a receive whose response
		// the endpoint lost blocks the session's FIFO group for that long,
		// not 6× the timeout.
		h.Functions = append(h.Functions, harness.Function{Queue: f.queue, URL: cfg.QueueURLs[f.queue], BatchSize: f.batch,
			Visibility: 6 * f.timeout, ReceiveHold: lambdafn.DefaultHold, Timeout: f.timeout,
			Handler: lambdafn.SQSHandler(f.queue, rt.Handle, log, lambdafn.WithVisibility(rt.Ports.Queue, lambdafn.Visibility{}), awsbackend.CoalesceWakeUps)})
	}
	background := func(ctx context.Context) {
		go rt.Repair.Loop(ctx, repair.DefaultPassEvery) // the repair function's passes
		go rt.ScheduleLoop(ctx, 10*time.Second)         // no EventBridge locally: the store is the schedule
		_ = h.Run(ctx)
	}
	// The gateway this plays authorizes the Authorization header only, as
	// API Gateway does: a browser reaches the console through cairn
	// console (docs/DEPLOY.md, "Console").
	return serve(ctx, *addr, apiGateway(lambdafn.APIHandler(rt.API), tokens, log), "cairn dev (aws backend)", background, *token, *data, "proxy")
}

// devIssuer is the JWT issuer `cairn dev --backend aws` plays: it checks a
// request's bearer token against DATA/tokens.json, as API Gateway's JWT
// authorizer checks a JWT, and hands the api function the claims {iss:
// devIssuer, sub: the token's name} — so its principals are named
// "cairn-dev|NAME".
const devIssuer = "cairn-dev"

// devOperators are the operators of `cairn dev --backend aws`: the
// principals of the operator tokens at start (a token made an operator
// later is one after a restart, as operators are a deployment's
// configuration on AWS) and those CAIRN_OPERATORS names.
func devOperators(tokens *auth.Store, env string) ([]string, error) {
	entries, err := tokens.List()
	if err != nil {
		return nil, err
	}
	ops := strings.Split(env, ",")
	for _, e := range entries {
		if e.Operator {
			ops = append(ops, devIssuer+"|"+e.Name)
		}
	}
	return ops, nil
}

// apiGateway serves HTTP by turning each request into the API Gateway HTTP
// API v2 event the api Lambda receives, and its response back. It plays a
// JWT authorizer: a request whose bearer token tokens knows carries that
// principal's claims (devIssuer); any other carries no authorizer context,
// which the api function refuses (401).
func apiGateway(fn func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error), tokens *auth.Store, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 6<<20)) // API Gateway's payload limit
		if err != nil {
			http.Error(w, `{"error":{"code":"too_large","message":"request body over the API Gateway limit"}}`, http.StatusRequestEntityTooLarge)
			return
		}
		path := r.URL.Path
		if r.URL.RawQuery != "" {
			path += "?" + r.URL.RawQuery
		}
		var authorizer []*events.APIGatewayV2HTTPRequestContextAuthorizerDescription
		p, err := tokens.Request(r)
		if err == nil {
			authorizer = append(authorizer, harness.JWT(devIssuer, p.Name))
		} else if !errors.Is(err, contracts.ErrPermission) {
			log.ErrorContext(r.Context(), "authenticating a request failed", "path", r.URL.Path, "error", err)
		}
		resp, err := fn(r.Context(), harness.APIEvent(r.Method, path, r.Header, body, authorizer...))
		if err != nil {
			http.Error(w, `{"error":{"code":"internal","message":"api function failed"}}`, http.StatusBadGateway)
			return
		}
		for k, v := range resp.Headers {
			w.Header().Set(k, v)
		}
		for k, vs := range resp.MultiValueHeaders {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.WriteString(w, resp.Body)
	})
}

func lookup(environ []string, key string) string {
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
