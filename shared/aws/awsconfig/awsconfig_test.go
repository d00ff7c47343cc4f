package awsconfig_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/cairnrun/cairn/shared/aws/awsconfig"
)

// A given configuration is kept (but for the endpoint); without one the
// default chain is loaded in the named region.
func TestLoad(t *testing.T) {
	t.Setenv("AWS_REGION", "eu-west-1")
	given := aws.Config{Region: "us-west-2"}
	got, err := awsconfig.Load(context.Background(), &given, "ap-south-1", "http://127.0.0.1:4566")
	if err != nil || got.Region != "us-west-2" || got.BaseEndpoint == nil || *got.BaseEndpoint != "http://127.0.0.1:4566" {
		t.Fatalf("given: %+v, %v", got, err)
	}
	if given.BaseEndpoint != nil {
		t.Fatal("Load changed the configuration it was given")
	}
	got, err = awsconfig.Load(context.Background(), nil, "ap-south-1", "")
	if err != nil || got.Region != "ap-south-1" || got.BaseEndpoint != nil {
		t.Fatalf("loaded: region %q endpoint %v, %v", got.Region, got.BaseEndpoint, err)
	}
	got, err = awsconfig.Load(context.Background(), nil, "", "")
	if err != nil || got.Region != "eu-west-1" {
		t.Fatalf("loaded without a region: %q, %v; want the environment's", got.Region, err)
	}
}
