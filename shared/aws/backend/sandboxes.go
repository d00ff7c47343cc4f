package backend

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/placement"
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
	Network                            string        // "private" or "public" (fargate.NetworkPrivate, fargate.NetworkPublic)
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
		f.Network = networkPrivate
	case networkPrivate, networkPublic:
	default:
		return nil, nil, fmt.Errorf("%s=%q: want %s or %s", EnvSandboxNetwork, f.Network, networkPrivate, networkPublic)
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
// holds the runtime's credentials) — placed by c.Serves.Sandboxes (the
// tools function's sandboxes.Fargate), else only checked (fargateChecks);
// without them, as on a local endpoint, "local" directories under
// SandboxDir.
func sandboxes(ctx context.Context, c Config, awsCfg aws.Config, sessions placement.Sessions, blobs contracts.BlobStore) (contracts.SandboxProvider, error) {
	kind := kindFargate
	var p contracts.SandboxProvider = fargateChecks{c.Fargate}
	if c.Fargate == nil {
		kind, p = "local", localChecks{}
	}
	if c.Serves.Sandboxes != nil {
		var err error
		if p, err = c.Serves.Sandboxes(ctx, c, awsCfg, sessions, blobs); err != nil {
			return nil, err
		}
	}
	return &placement.Router{Default: kind, Kinds: map[string]contracts.SandboxProvider{kind: p}}, nil
}
