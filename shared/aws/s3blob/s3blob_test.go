package s3blob_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairnrun/cairn/shared/aws/s3blob"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/awstest"
	"github.com/cairnrun/cairn/shared/testkit/conformance/storetest"
)

func newStore(t *testing.T) *s3blob.Store {
	t.Helper()
	client := s3.NewFromConfig(awstest.Config(t), func(o *s3.Options) { o.UsePathStyle = true })
	bucket := awstest.Name(t, "cairn-blob")
	ctx := awstest.Context(t)
	for range 2 { // idempotent
		if err := s3blob.CreateBucket(ctx, client, bucket); err != nil {
			t.Fatalf("CreateBucket: %v", err)
		}
	}
	return s3blob.New(client, bucket)
}

func TestBlobConformance(t *testing.T) {
	s := newStore(t)
	storetest.RunBlob(t, func(*testing.T) contracts.BlobStore { return s })
}
