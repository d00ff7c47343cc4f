package backend

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/fargate"
	"github.com/cairnrun/cairn/shared/sandbox/local"
	"github.com/cairnrun/cairn/shared/sandbox/placement"
	"github.com/cairnrun/cairn/shared/sandbox/snapshot"
	"github.com/cairnrun/cairn/shared/secrets"
)

// Environment of the fargate sandboxes (all but the idle time required once
// CAIRN_SANDBOX_CLUSTER is set).
const (
	EnvSandboxCluster        = "CAIRN_SANDBOX_CLUSTER"
	EnvSandboxTaskDefinition = "CAIRN_SANDBOX_TASK_DEFINITION"
	EnvSandboxContainer      = "CAIRN_SANDBOX_CONTAINER" // default "sandboxd"
	EnvSandboxSubnets        = "CAIRN_SANDBOX_SUBNETS"   // comma-separated subnet ids (private or public, by the network)
	EnvSandboxSecurityGroups = "CAIRN_SANDBOX_SECURITY_GROUPS"
	// EnvSandboxNetwork is the sandbox network, "private" (the default when
	// unset) or "public": tasks with a public IP, read with EC2, spoken to
	// over TLS pinned per sandbox (fargate.Config.Network).
	EnvSandboxNetwork = "CAIRN_SANDBOX_NETWORK"
	// EnvSandboxInternetSecurityGroups: with "public", the task groups of
	// sessions whose spec asks for network "internet" (unset: refused).
	EnvSandboxInternetSecurityGroups = "CAIRN_SANDBOX_INTERNET_SECURITY_GROUPS"
	// EnvSandboxKeySecret is a reference (secrets package: env:NAME,
	// secretsmanager:ID or an ARN) to the key sandbox tokens derive from.
	EnvSandboxKeySecret = "CAIRN_SANDBOX_KEY_SECRET"
	EnvSandboxIdle      = "CAIRN_SANDBOX_IDLE_SECONDS"
)

// Fargate places session sandboxes in ECS tasks (the "fargate" kind).
type Fargate struct {
	Cluster, TaskDefinition, Container string
	Subnets, SecurityGroups            []string
	Network                            string        // fargate.NetworkPrivate or fargate.NetworkPublic
	InternetSecurityGroups             []string      // public only: spec network "internet"
	KeySecret                          string        // reference, never the key
	IdleTimeout                        time.Duration // 0 = fargate.DefaultIdleTimeout
}

// fargateFromEnv reads the Fargate settings; nil without a cluster.
func fargateFromEnv(getenv func(string) string) (*Fargate, []string, error) {
	if getenv(EnvSandboxCluster) == "" {
		return nil, nil, nil
	}
	list := func(k string) []string {
		var out []string
		for _, s := range strings.Split(getenv(k), ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	f := &Fargate{
		Cluster: getenv(EnvSandboxCluster), TaskDefinition: getenv(EnvSandboxTaskDefinition), Container: getenv(EnvSandboxContainer),
		Subnets: list(EnvSandboxSubnets), SecurityGroups: list(EnvSandboxSecurityGroups), KeySecret: getenv(EnvSandboxKeySecret),
		Network: strings.TrimSpace(getenv(EnvSandboxNetwork)), InternetSecurityGroups: list(EnvSandboxInternetSecurityGroups),
	}
	switch f.Network {
	case "":
		f.Network = fargate.NetworkPrivate
	case fargate.NetworkPrivate, fargate.NetworkPublic:
	default:
		return nil, nil, fmt.Errorf("%s=%q: want %s or %s", EnvSandboxNetwork, f.Network, fargate.NetworkPrivate, fargate.NetworkPublic)
	}
	if f.Container == "" {
		f.Container = "sandboxd"
	}
	var missing []string
	for _, k := range []string{EnvSandboxTaskDefinition, EnvSandboxSubnets, EnvSandboxSecurityGroups, EnvSandboxKeySecret} {
		if strings.TrimSpace(getenv(k)) == "" {
			missing = append(missing, k)
		}
	}
	if s := getenv(EnvSandboxIdle); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 || n > 7*24*3600 {
			return nil, nil, fmt.Errorf("%s=%q: want a number of seconds from 1 to 604800 (a week)", EnvSandboxIdle, s)
		}
		f.IdleTimeout = time.Duration(n) * time.Second
	}
	return f, missing, nil
}

// sandboxes is the deployment's SandboxProvider: with Fargate settings
// only the "fargate" kind is served (tools never run in the process that
// holds the runtime's credentials); without them, as on a local endpoint,
// "local" directories under SandboxDir.
func sandboxes(ctx context.Context, c Config, awsCfg aws.Config, sessions placement.Sessions, blobs contracts.BlobStore) (contracts.SandboxProvider, error) {
	if c.Fargate == nil {
		dir := c.SandboxDir
		if dir == "" {
			dir = filepath.Join("/tmp", "cairn-sandboxes")
		}
		return &placement.Router{Default: "local", Kinds: map[string]contracts.SandboxProvider{"local": local.NewProvider(dir, local.Options{Env: c.Env})}}, nil
	}
	f := c.Fargate
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
	return &placement.Router{Default: fargate.Kind, Kinds: map[string]contracts.SandboxProvider{fargate.Kind: p}}, nil
}
