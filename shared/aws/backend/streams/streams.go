package streams

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairnrun/cairn/shared/api"
	"github.com/cairnrun/cairn/shared/aws/awsconfig"
	"github.com/cairnrun/cairn/shared/aws/dynamo"
	"github.com/cairnrun/cairn/shared/aws/lambdafn"
	"github.com/cairnrun/cairn/shared/aws/s3blob"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/dumpable"
	"github.com/cairnrun/cairn/shared/telemetry"
)

// The variables FromEnv reads: shared/aws/backend's names for the same
// settings.
const (
	EnvTable     = "CAIRN_TABLE"
	EnvBucket    = "CAIRN_BUCKET"
	EnvOperators = "CAIRN_OPERATORS"
	EnvRegion    = "AWS_REGION"
	EnvEndpoint  = "AWS_ENDPOINT_URL"
)

// Config of the event streams' backend.
type Config struct {
	Region   string
	Endpoint string // empty: the SDK's default resolution
	Table    string // the DynamoDB table the runtime writes
	Bucket   string // its S3 claim checks
	// Operators may read everyone's streams (EnvOperators), as on the api
	// function.
	Operators []string
	Log       *slog.Logger
	// Clock of the store; nil = the wall clock.
	Clock contracts.Clock
	// AWS overrides the loaded SDK config (tests); nil = config.LoadDefaultConfig.
	AWS *aws.Config
}

// FromEnv reads the configuration; a missing variable is named in the error.
func FromEnv(getenv func(string) string) (Config, error) {
	c := Config{Region: getenv(EnvRegion), Endpoint: getenv(EnvEndpoint), Table: getenv(EnvTable), Bucket: getenv(EnvBucket)}
	if ops := getenv(EnvOperators); ops != "" {
		c.Operators = strings.Split(ops, ",")
	}
	var missing []string
	for _, k := range []string{EnvTable, EnvBucket} {
		if getenv(k) == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return c, fmt.Errorf("stream backend: missing environment: %s", strings.Join(missing, ", "))
	}
	return c, nil
}

// New builds the DynamoDB and S3 clients and returns the event streams'
// handler (api.NewStreams) over them, authenticating callers with
// lambdafn.Authenticate. It calls no AWS API.
func New(ctx context.Context, c Config) (http.Handler, error) {
	if c.Table == "" || c.Bucket == "" {
		return nil, errors.New("stream backend: Table and Bucket are required")
	}
	ops, err := lambdafn.ParseOperators(c.Operators)
	if err != nil {
		return nil, fmt.Errorf("stream backend: %s: %w", EnvOperators, err)
	}
	awsCfg, err := awsconfig.Load(ctx, c.AWS, c.Region, c.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("stream backend: %w", err)
	}
	blobs := s3blob.New(s3.NewFromConfig(awsCfg, func(o *s3.Options) { o.UsePathStyle = c.Endpoint != "" }), c.Bucket)
	store, err := dynamo.New(dynamodb.NewFromConfig(awsCfg), dynamo.Options{Table: c.Table, Blobs: blobs, Clock: c.Clock})
	if err != nil {
		return nil, fmt.Errorf("stream backend: %w", err)
	}
	return api.NewStreams(api.Config{
		Journal: store, Transcript: store, Events: store,
		Authenticate: lambdafn.Authenticate(ops), Log: c.Log,
	}), nil
}

// Boot is what the stream function's main does: switch the process's
// dumpable flag off (no process of its user reads its credentials through
// /proc), read the environment through getenv, set up telemetry as every
// function does (traces when the OTEL_* variables ask; metrics as EMF lines
// on Lambda), then New.
func Boot(ctx context.Context, getenv func(string) string, log *slog.Logger) (http.Handler, error) {
	if err := dumpable.Off(); err != nil {
		return nil, err
	}
	c, err := FromEnv(getenv)
	if err != nil {
		return nil, err
	}
	c.Log = log
	if err := telemetry.SetupFunction(ctx, getenv, os.Stdout); err != nil {
		return nil, err
	}
	return New(ctx, c)
}
