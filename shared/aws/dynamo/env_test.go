package dynamo

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairnrun/cairn/shared/aws/s3blob"
	"github.com/cairnrun/cairn/shared/testkit/awstest"
)

// testEnv is the table and bucket every test of the package shares: created
// once, on first use, and removed by TestMain. Ids are unique per test, so
// tests never see each other's records.
type testEnv struct {
	ddb    *dynamodb.Client
	s3     *s3.Client
	table  string
	bucket string
	blobs  *s3blob.Store
}

var shared struct {
	once sync.Once
	env  *testEnv
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if e := shared.env; e != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := e.destroy(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "removing test table and bucket:", err)
		}
		cancel()
	}
	os.Exit(code)
}

// env returns the shared table and bucket, skipping (or with CI=true
// failing) the test when no endpoint answers.
func env(t *testing.T) *testEnv {
	t.Helper()
	cfg := awstest.Config(t)
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		e := &testEnv{
			ddb:    dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.ClientLogMode = aws.LogRetries }),
			s3:     s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true }),
			table:  awstest.Name(t, "cairn-dynamo"),
			bucket: awstest.Name(t, "cairn-dynamo"),
		}
		e.blobs = s3blob.New(e.s3, e.bucket)
		shared.env, shared.err = e, e.create(ctx)
	})
	if shared.err != nil {
		t.Fatalf("creating test table and bucket: %v", shared.err)
	}
	return shared.env
}

func (e *testEnv) create(ctx context.Context) error {
	if err := CreateTable(ctx, e.ddb, e.table); err != nil {
		return err
	}
	if err := EnableTTL(ctx, e.ddb, e.table); err != nil {
		return err
	}
	return s3blob.CreateBucket(ctx, e.s3, e.bucket)
}

func (e *testEnv) destroy(ctx context.Context) error {
	if _, err := e.ddb.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &e.table}); err != nil {
		return err
	}
	p := s3.NewListObjectsV2Paginator(e.s3, &s3.ListObjectsV2Input{Bucket: &e.bucket})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, o := range page.Contents {
			if _, err := e.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &e.bucket, Key: o.Key}); err != nil {
				return err
			}
		}
	}
	_, err := e.s3.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(e.bucket)})
	return err
}

// fixedClock is a contracts.Clock standing still.
type fixedClock time.Time

func (c fixedClock) Now() time.Time { return time.Time(c) }

// store returns a Store on the shared table with opts' Table and Blobs
// filled in.
func (e *testEnv) store(t *testing.T, opts Options) *Store {
	t.Helper()
	opts.Table = e.table
	if opts.Blobs == nil {
		opts.Blobs = e.blobs
	}
	s, err := New(e.ddb, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}
