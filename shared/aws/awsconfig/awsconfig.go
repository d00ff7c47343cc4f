package awsconfig

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
)

// Load returns *given when set, else the default configuration (in region
// when it is not ""), with its BaseEndpoint set to endpoint when that is
// not "". It calls no AWS API.
func Load(ctx context.Context, given *aws.Config, region, endpoint string) (aws.Config, error) {
	var cfg aws.Config
	if given != nil {
		cfg = *given
	} else {
		var opts []func(*config.LoadOptions) error
		if region != "" {
			opts = append(opts, config.WithRegion(region))
		}
		loaded, err := config.LoadDefaultConfig(ctx, opts...)
		if err != nil {
			return aws.Config{}, fmt.Errorf("loading AWS config: %w", err)
		}
		cfg = loaded
	}
	if endpoint != "" {
		cfg.BaseEndpoint = aws.String(endpoint)
	}
	return cfg, nil
}
