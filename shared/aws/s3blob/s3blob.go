package s3blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Store is a contracts.BlobStore on one S3 bucket: key → object key. It is
// safe for concurrent use.
type Store struct {
	client *s3.Client
	bucket string
}

var _ contracts.BlobStore = (*Store)(nil)

// New returns a Store on bucket, which must exist (see CreateBucket).
func New(client *s3.Client, bucket string) *Store {
	return &Store{client: client, bucket: bucket}
}

// PutBlob stores data under key unless the key exists: a conditional
// PutObject (If-None-Match: *); the precondition failing means the key is
// taken, and the first write wins.
func (s *Store) PutBlob(ctx context.Context, key string, data []byte) error {
	if key == "" {
		return fmt.Errorf("putting blob: empty key: %w", contracts.ErrInvalid)
	}
	for attempt := 0; ; attempt++ {
		_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
			Bucket:        &s.bucket,
			Key:           &key,
			Body:          bytes.NewReader(data),
			ContentLength: new(int64(len(data))),
			IfNoneMatch:   new("*"),
		})
		switch status(err) {
		case 0:
			return nil
		case http.StatusPreconditionFailed:
			return nil // exists: the first write wins
		case http.StatusConflict:
			// A concurrent conditional write of the same key is in flight;
			// retry so that we return only once the key exists.
			if attempt < 5 {
				if err := wait(ctx, time.Duration(attempt+1)*50*time.Millisecond); err != nil {
					return fmt.Errorf("putting blob %s in bucket %s: %w", key, s.bucket, err)
				}
				continue
			}
		}
		return fmt.Errorf("putting blob %s in bucket %s: %w", key, s.bucket, err)
	}
}

// GetBlob returns the blob or ErrNotFound.
func (s *Store) GetBlob(ctx context.Context, key string) ([]byte, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &key})
	if err != nil {
		var nsk *types.NoSuchKey
		if errors.As(err, &nsk) || status(err) == http.StatusNotFound {
			return nil, fmt.Errorf("getting blob %s from bucket %s: %w", key, s.bucket, contracts.ErrNotFound)
		}
		return nil, fmt.Errorf("getting blob %s from bucket %s: %w", key, s.bucket, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, fmt.Errorf("reading blob %s from bucket %s: %w", key, s.bucket, err)
	}
	return data, nil
}

// CreateBucket creates bucket; a no-op if this account already owns it.
func CreateBucket(ctx context.Context, client *s3.Client, bucket string) error {
	_, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket})
	var owned *types.BucketAlreadyOwnedByYou
	if err != nil && !errors.As(err, &owned) {
		return fmt.Errorf("creating bucket %s: %w", bucket, err)
	}
	return nil
}

func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// status is the HTTP status of an S3 error (0 for nil or a non-HTTP error).
func status(err error) int {
	if err == nil {
		return 0
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() == "PreconditionFailed" {
		return http.StatusPreconditionFailed
	}
	return -1
}
