// Command coldstart provisions (idempotently) the table, bucket and queues
// of a cold-start measurement on a local endpoint (moto, LocalStack) with
// backend.Provision, and prints the environment a function's bootstrap
// reads, one NAME=value a line. scripts/coldstart.sh runs it.
//
//	go run ./scripts/coldstart -endpoint http://127.0.0.1:4566 -prefix cairn-coldstart
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/cairnrun/cairn/shared/aws/backend"
)

func main() {
	endpoint := flag.String("endpoint", "http://127.0.0.1:4566", "the local AWS endpoint")
	prefix := flag.String("prefix", "cairn-coldstart", "table, bucket and queue name prefix")
	flag.Parse()
	cfg := aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(*endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")}
	c, err := backend.Provision(context.Background(), cfg, backend.Names{Table: *prefix, Bucket: *prefix + "-blobs", QueuePrefix: *prefix})
	if err != nil {
		fmt.Fprintln(os.Stderr, "coldstart: provisioning:", err)
		os.Exit(1)
	}
	env := map[string]string{backend.EnvTable: c.Table, backend.EnvBucket: c.Bucket, backend.EnvEndpoint: *endpoint, backend.EnvRegion: "us-east-1"}
	for q, url := range c.QueueURLs {
		env[backend.QueueEnv(q)] = url
	}
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Printf("%s=%s\n", k, env[k])
	}
}
