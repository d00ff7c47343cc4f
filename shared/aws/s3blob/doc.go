// Package s3blob is the S3 adapter of contracts.BlobStore: the claim checks
// for payloads too big for a DynamoDB item. A blob key is an object key in
// one bucket; PutBlob is create-if-absent through a conditional PutObject
// (If-None-Match: *), so content-addressed writers never overwrite each
// other.
//
// It may import shared/contracts, the standard library and the AWS SDK.
//
// # Usage
//
//	client := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true }) // path style for LocalStack/moto
//	if err := s3blob.CreateBucket(ctx, client, bucket); err != nil { // idempotent
//		return err
//	}
//	blobs := s3blob.New(client, bucket)
//	store, err := dynamo.New(ddb, dynamo.Options{Table: table, Blobs: blobs})
package s3blob
