package sandboxes

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/cairnrun/cairn/shared/aws/backend"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/fargate"
	"github.com/cairnrun/cairn/shared/sandbox/local"
	"github.com/cairnrun/cairn/shared/sandbox/placement"
	"github.com/cairnrun/cairn/shared/sandbox/snapshot"
	"github.com/cairnrun/cairn/shared/secrets"
)

var _ backend.SandboxesFunc = Fargate

// Fargate is the "fargate" kind's provider of c.Fargate: the sandbox key
// is resolved now (a reference that does not resolve stops the boot,
// naming it).
func Fargate(ctx context.Context, c backend.Config, awsCfg aws.Config, sessions placement.Sessions, blobs contracts.BlobStore) (contracts.SandboxProvider, error) {
	f := c.Fargate
	if f == nil { // a local endpoint: directories under SandboxDir
		dir := c.SandboxDir
		if dir == "" {
			dir = filepath.Join("/tmp", "cairn-sandboxes")
		}
		return local.NewProvider(dir, local.Options{Env: c.Env}), nil
	}
	getenv := c.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	key, err := secrets.Resolver{Getenv: getenv, SecretsManager: secretsmanager.NewFromConfig(awsCfg)}.Resolve(ctx, f.KeySecret)
	if err != nil {
		return nil, fmt.Errorf("aws backend: sandbox key: %w", err)
	}
	var ec2 fargate.EC2API
	if f.Network == fargate.NetworkPublic {
		ec2 = fargate.NewEC2(awsCfg) // the tasks' public IPs
	}
	p, err := fargate.New(fargate.Config{
		ECS: ecs.NewFromConfig(awsCfg), Cluster: f.Cluster, TaskDefinition: f.TaskDefinition, Container: f.Container,
		Subnets: f.Subnets, SecurityGroups: f.SecurityGroups, Sessions: sessions,
		Network: f.Network, InternetSecurityGroups: f.InternetSecurityGroups, EC2: ec2,
		Tokens: placement.Tokens{Key: []byte(key)}, IdleTimeout: f.IdleTimeout, Log: c.Log,
		Snapshots: &snapshot.Store{Blobs: blobs},
	})
	if err != nil {
		return nil, fmt.Errorf("aws backend: %w", err)
	}
	return p, nil
}
