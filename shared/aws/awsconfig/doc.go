// Package awsconfig loads the AWS SDK configuration a backend builds its
// clients from — the one given, else the SDK's default chain (in a region
// when one is named) — and points it at an endpoint when one is named
// (moto or LocalStack on 127.0.0.1:4566). The runtime's backend
// (shared/aws/backend) and the stream function's (shared/aws/backend/streams)
// load theirs the same way.
//
// It may import the AWS SDK for Go v2 and the standard library.
package awsconfig
