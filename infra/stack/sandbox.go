package stack

import (
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecr"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecrassets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/jsii-runtime-go"
)

const (
	maxAZs = 2
	// SandboxIdleSeconds: an idle sandboxd exits and its task stops, so no
	// task runs when nobody works (CAIRN_SANDBOX_IDLE_SECONDS).
	SandboxIdleSeconds = 900
	// SandboxRunAs is the uid:gid sandboxd (root in the task) runs commands
	// as: the image's sandbox user (SANDBOXD_RUN_AS).
	SandboxRunAs      = "10001:10001"
	sandboxDockerfile = "functions/sandboxd/Dockerfile"
	sandboxBinary     = "dist/sandboxd/bootstrap"
)

// Sandbox is the Fargate side: the VPC (private: isolated subnets and the
// endpoints its two clients need; public: public subnets and an internet
// gateway, no endpoints — Props.Network, docs/DEPLOY.md "Sandbox
// network"), the cluster, the sandboxd task and its security groups.
type Sandbox struct {
	Network   string // NetworkPrivate or NetworkPublic
	Vpc       awsec2.Vpc
	Gateways  map[string]awsec2.GatewayVpcEndpoint   // private only: dynamodb, s3
	Endpoints map[string]awsec2.InterfaceVpcEndpoint // private only, by short name: sqs, ecr, ecr.dkr, logs, ecs, secretsmanager
	Cluster   awsecs.Cluster
	Task      awsecs.FargateTaskDefinition
	TaskRole  awsiam.Role
	ToolsSG   awsec2.SecurityGroup // private only: the tools function's ENIs (public: tools is outside the VPC)
	// TaskSG: sandboxd tasks (CAIRN_SANDBOX_SECURITY_GROUPS), with no
	// internet: private, HTTPS to the endpoints only; public, HTTPS out for
	// the image pull and logs (Fargate does both through the task's ENI).
	TaskSG awsec2.SecurityGroup
	// InternetSG: public only, the tasks of sessions that ask for
	// `network: internet` (CAIRN_SANDBOX_INTERNET_SECURITY_GROUPS).
	InternetSG awsec2.SecurityGroup
	Key        awssecretsmanager.Secret
	Logs       awslogs.LogGroup
}

func (s *Stack) addSandbox() {
	b := &Sandbox{Network: s.Props.Network, Gateways: map[string]awsec2.GatewayVpcEndpoint{}, Endpoints: map[string]awsec2.InterfaceVpcEndpoint{}}
	s.Sandbox = b
	if b.Network == NetworkPublic {
		s.addPublicNetwork(b)
	} else {
		s.addPrivateNetwork(b)
	}

	b.Cluster = awsecs.NewCluster(s.Stack, jsii.String("Sandboxes"), &awsecs.ClusterProps{Vpc: b.Vpc})
	// The key per-sandbox tokens derive from (placement.Tokens): generated
	// here, read by the functions that run or check sandboxes.
	b.Key = awssecretsmanager.NewSecret(s.Stack, jsii.String("SandboxKey"), &awssecretsmanager.SecretProps{
		Description: jsii.String("cairn: key the per-sandbox bearer tokens derive from"),
		GenerateSecretString: &awssecretsmanager.SecretStringGenerator{
			PasswordLength: jsii.Number(64), ExcludePunctuation: jsii.Bool(true),
		},
		RemovalPolicy: s.settings().removal,
	})
	// The task role: sandboxed commands get credentials for it, so it has
	// no permissions at all.
	b.TaskRole = awsiam.NewRole(s.Stack, jsii.String("SandboxTaskRole"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("ecs-tasks.amazonaws.com"), nil),
		Description: jsii.String("cairn sandboxd task: no permissions"),
	})
	b.Task = awsecs.NewFargateTaskDefinition(s.Stack, jsii.String("SandboxTask"), &awsecs.FargateTaskDefinitionProps{
		Family:         jsii.String(taskFamily(s.Props.Prefix)),
		Cpu:            jsii.Number(1024), // per-session overrides from the sandbox spec
		MemoryLimitMiB: jsii.Number(2048),
		RuntimePlatform: &awsecs.RuntimePlatform{
			CpuArchitecture: awsecs.CpuArchitecture_ARM64(), OperatingSystemFamily: awsecs.OperatingSystemFamily_LINUX(),
		},
		TaskRole: b.TaskRole,
	})
	b.Logs = s.logGroup("SandboxLogs", logSandbox)
	b.Task.AddContainer(jsii.String(SandboxContainer), &awsecs.ContainerDefinitionOptions{
		ContainerName: jsii.String(SandboxContainer),
		Image:         s.sandboxImage(),
		Essential:     jsii.Bool(true),
		PortMappings:  &[]*awsecs.PortMapping{{ContainerPort: jsii.Number(SandboxPort), Protocol: awsecs.Protocol_TCP}},
		// The image runs sandboxd as root and its commands as the image's
		// sandbox user, 10001 (functions/sandboxd/Dockerfile): they cannot
		// touch the call ledger. Set here too, so the task does not depend
		// on the image's default. No User: root is needed to switch uid.
		Environment: s.sandboxdTracing(map[string]*string{
			"SANDBOXD_IDLE_TIMEOUT": jsii.String(strconv.Itoa(SandboxIdleSeconds) + "s"),
			"SANDBOXD_RUN_AS":       jsii.String(SandboxRunAs),
		}),
		Logging: awsecs.LogDriver_AwsLogs(&awsecs.AwsLogDriverProps{LogGroup: b.Logs, StreamPrefix: jsii.String("sandboxd")}),
	})
}

// addPrivateNetwork: private isolated subnets only — no NAT gateway, no
// internet gateway, no route out. Everything the tools function and the
// tasks reach is a VPC endpoint (addEndpoints), and every endpoint's
// policy admits only the role that uses it, on this account's resources
// (addEndpointPolicies, once the roles exist).
func (s *Stack) addPrivateNetwork(b *Sandbox) {
	b.Vpc = awsec2.NewVpc(s.Stack, jsii.String("Vpc"), &awsec2.VpcProps{
		IpAddresses: awsec2.IpAddresses_Cidr(jsii.String("10.40.0.0/16")),
		MaxAzs:      jsii.Number(maxAZs),
		NatGateways: jsii.Number(0),
		SubnetConfiguration: &[]*awsec2.SubnetConfiguration{{
			Name: jsii.String("sandbox"), SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED, CidrMask: jsii.Number(20),
		}},
		RestrictDefaultSecurityGroup: jsii.Bool(false), // true adds a custom-resource function; nothing uses the default group
	})
	// Neither group may send anything but what it needs: HTTPS (the
	// endpoints; the allowFrom rules in addEndpoints add the egress to
	// each interface endpoint's group) and, for tools, sandboxd's port.
	// The HTTPS rule to 0.0.0.0/0 is for the gateway endpoints (S3, and
	// DynamoDB for tools), which have public addresses (a region's
	// prefix list, whose id a region-agnostic template cannot name);
	// with no route out, nothing else answers on them, and the gateway
	// endpoints' policies admit only this stack's roles.
	b.ToolsSG = awsec2.NewSecurityGroup(s.Stack, jsii.String("ToolsSG"), &awsec2.SecurityGroupProps{
		Vpc: b.Vpc, AllowAllOutbound: jsii.Bool(false), Description: jsii.String("cairn tools function"),
	})
	b.ToolsSG.AddEgressRule(awsec2.Peer_AnyIpv4(), awsec2.Port_Tcp(jsii.Number(443)), jsii.String("HTTPS to the VPC endpoints (gateway endpoints have public addresses)"), nil)
	// The sandbox tasks: sandboxd's control port admits only the tools
	// function; HTTPS out for the image pull (ECR endpoints, S3 gateway)
	// and logs. Sandboxed commands reach no internet and, through the
	// endpoints, nothing their policies do not admit (none admits the task
	// role, which has no permissions anyway).
	b.TaskSG = awsec2.NewSecurityGroup(s.Stack, jsii.String("SandboxSG"), &awsec2.SecurityGroupProps{
		Vpc: b.Vpc, AllowAllOutbound: jsii.Bool(false), Description: jsii.String("cairn sandboxd tasks"),
	})
	b.TaskSG.AddEgressRule(awsec2.Peer_AnyIpv4(), awsec2.Port_Tcp(jsii.Number(443)), jsii.String("HTTPS to the VPC endpoints: image pull (S3 gateway for the layers) and logs"), nil)
	// Ingress on the task group and the matching egress on the tools group.
	b.TaskSG.Connections().AllowFrom(b.ToolsSG, awsec2.Port_Tcp(jsii.Number(SandboxPort)), jsii.String("sandboxd control port, from the tools function only"))
	s.addEndpoints(b)
}

// addPublicNetwork: public subnets with an internet gateway (free), no NAT
// gateway, no endpoints. A task with a public IP pulls its image and ships
// its logs over the internet through its own ENI; the tools function stays
// outside the VPC and reaches sandboxd on the task's public IP. The control
// port is open to the internet because Lambda's addresses have no prefix
// list: what protects it is the bearer token and — which the runtime must
// add before this network is safe to use — TLS pinned to a per-sandbox
// certificate (docs/DEPLOY.md).
func (s *Stack) addPublicNetwork(b *Sandbox) {
	b.Vpc = awsec2.NewVpc(s.Stack, jsii.String("Vpc"), &awsec2.VpcProps{
		IpAddresses: awsec2.IpAddresses_Cidr(jsii.String("10.40.0.0/16")),
		MaxAzs:      jsii.Number(maxAZs),
		NatGateways: jsii.Number(0),
		SubnetConfiguration: &[]*awsec2.SubnetConfiguration{{
			Name: jsii.String("sandbox"), SubnetType: awsec2.SubnetType_PUBLIC, CidrMask: jsii.Number(20),
			// Only a RunTask asking for one (assignPublicIp) gets a public IP.
			MapPublicIpOnLaunch: jsii.Bool(false),
		}},
		RestrictDefaultSecurityGroup: jsii.Bool(false),
	})
	port := awsec2.Port_Tcp(jsii.Number(SandboxPort))
	// network: none — HTTPS out only, which the pull (ECR, S3) and the
	// awslogs driver need and which no AWS prefix list narrows (S3's
	// alone would not do): so HTTPS to any host, no other port or protocol.
	// (DNS goes to the VPC resolver, which security groups do not filter.)
	b.TaskSG = awsec2.NewSecurityGroup(s.Stack, jsii.String("SandboxSG"), &awsec2.SecurityGroupProps{
		Vpc: b.Vpc, AllowAllOutbound: jsii.Bool(false), Description: jsii.String("cairn sandboxd tasks: no internet but the image pull and logs (HTTPS)"),
	})
	b.TaskSG.AddEgressRule(awsec2.Peer_AnyIpv4(), awsec2.Port_Tcp(jsii.Number(443)), jsii.String("HTTPS: image pull (ECR, S3) and logs"), nil)
	b.TaskSG.AddIngressRule(awsec2.Peer_AnyIpv4(), port, jsii.String("sandboxd control port: bearer token (and TLS, runtime)"), nil)
	// network: internet — everything out.
	b.InternetSG = awsec2.NewSecurityGroup(s.Stack, jsii.String("SandboxInternetSG"), &awsec2.SecurityGroupProps{
		Vpc: b.Vpc, AllowAllOutbound: jsii.Bool(true), Description: jsii.String("cairn sandboxd tasks of sessions with network: internet"),
	})
	b.InternetSG.AddIngressRule(awsec2.Peer_AnyIpv4(), port, jsii.String("sandboxd control port: bearer token (and TLS, runtime)"), nil)
}

// sandboxSubnets are the subnets the tasks run in.
func (b *Sandbox) sandboxSubnets() []awsec2.ISubnet {
	if b.Network == NetworkPublic {
		return *b.Vpc.PublicSubnets()
	}
	return *b.Vpc.IsolatedSubnets()
}

// sandboxImage: the Dockerfile asset (build context = the repo root, cut
// down to the two files the Dockerfile uses, so synthesis stages a few MB
// and never the tree), or the given image: an ECR one through its
// repository (so the execution role may pull it), any other as it is.
func (s *Stack) sandboxImage() awsecs.ContainerImage {
	if m := ecrImage.FindStringSubmatch(s.Props.SandboxImage); m != nil {
		// ECR: the execution role is granted the pull of that repository.
		tag := m[4]
		if m[5] != "" {
			tag = m[5]
		} else if tag == "" {
			tag = "latest"
		}
		repo := awsecr.Repository_FromRepositoryAttributes(s.Stack, jsii.String("SandboxImageRepository"), &awsecr.RepositoryAttributes{
			RepositoryArn: s.arn("ecr", m[2], m[1], "repository/"+m[3]), RepositoryName: jsii.String(m[3]),
		})
		return awsecs.ContainerImage_FromEcrRepository(repo, jsii.String(tag))
	}
	if s.Props.SandboxImage != "" {
		// A public image (network=public only: checkSandboxImage).
		return awsecs.ContainerImage_FromRegistry(jsii.String(s.Props.SandboxImage), nil)
	}
	return awsecs.ContainerImage_FromAsset(jsii.String(s.Props.ImageContext), &awsecs.AssetImageProps{
		File:       jsii.String(sandboxDockerfile),
		Platform:   awsecrassets.Platform_LINUX_ARM64(),
		IgnoreMode: awscdk.IgnoreMode_DOCKER,
		Exclude:    jsii.Strings("*", "!"+sandboxDockerfile, "!"+sandboxBinary),
	})
}

// addEndpoints adds what replaces a NAT gateway. Gateway endpoints are
// free; interface endpoints are billed per hour and AZ (docs/DEPLOY.md), so
// they sit in EndpointAZs subnets (dev: one) and each admits only the
// security groups that use it.
func (s *Stack) addEndpoints(b *Sandbox) {
	isolated := &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED}
	// DynamoDB: the tools function reads and advances the journal.
	b.Gateways["dynamodb"] = b.Vpc.AddGatewayEndpoint(jsii.String("DynamoDB"), &awsec2.GatewayVpcEndpointOptions{
		Service: awsec2.GatewayVpcEndpointAwsService_DYNAMODB(), Subnets: &[]*awsec2.SubnetSelection{isolated},
	})
	// S3: the tools function's claim checks, and the image layers of the
	// sandboxd pull (ECR stores layers in S3).
	b.Gateways["s3"] = b.Vpc.AddGatewayEndpoint(jsii.String("S3"), &awsec2.GatewayVpcEndpointOptions{
		Service: awsec2.GatewayVpcEndpointAwsService_S3(), Subnets: &[]*awsec2.SubnetSelection{isolated},
	})
	var subnets []awsec2.ISubnet
	for i, sn := range *b.Vpc.IsolatedSubnets() {
		if i < s.Props.EndpointAZs {
			subnets = append(subnets, sn)
		}
	}
	tools, tasks := []awsec2.ISecurityGroup{b.ToolsSG}, []awsec2.ISecurityGroup{b.TaskSG}
	for _, e := range []struct {
		name, id string
		svc      awsec2.InterfaceVpcEndpointAwsService
		clients  []awsec2.ISecurityGroup
	}{
		// SQS: the tools phase enqueues the next model step.
		{"sqs", "SqsEndpoint", awsec2.InterfaceVpcEndpointAwsService_SQS(), tools},
		// ECS: the tools function runs, describes and stops sandbox tasks.
		{"ecs", "EcsEndpoint", awsec2.InterfaceVpcEndpointAwsService_ECS(), tools},
		// Secrets Manager: the tools function reads the sandbox token key.
		{"secretsmanager", "SecretsManagerEndpoint", awsec2.InterfaceVpcEndpointAwsService_SECRETS_MANAGER(), tools},
		// ECR API and registry: Fargate pulls the sandboxd image.
		{"ecr", "EcrApiEndpoint", awsec2.InterfaceVpcEndpointAwsService_ECR(), tasks},
		{"ecr.dkr", "EcrDockerEndpoint", awsec2.InterfaceVpcEndpointAwsService_ECR_DOCKER(), tasks},
		// CloudWatch Logs: the sandboxd container's awslogs driver. (Lambda
		// writes the functions' logs itself, outside the VPC.)
		{"logs", "LogsEndpoint", awsec2.InterfaceVpcEndpointAwsService_CLOUDWATCH_LOGS(), tasks},
	} {
		// An endpoint only answers: its group sends nothing.
		sg := awsec2.NewSecurityGroup(s.Stack, jsii.String(e.id+"SG"), &awsec2.SecurityGroupProps{
			Vpc: b.Vpc, AllowAllOutbound: jsii.Bool(false), Description: jsii.String("cairn " + e.name + " endpoint"),
		})
		ep := awsec2.NewInterfaceVpcEndpoint(s.Stack, jsii.String(e.id), &awsec2.InterfaceVpcEndpointProps{
			Vpc: b.Vpc, Service: e.svc, PrivateDnsEnabled: jsii.Bool(true), Open: jsii.Bool(false),
			Subnets: &awsec2.SubnetSelection{Subnets: &subnets}, SecurityGroups: &[]awsec2.ISecurityGroup{sg},
		})
		for _, c := range e.clients {
			ep.Connections().AllowDefaultPortFrom(c, jsii.String("HTTPS from "+*c.Node().Id()))
		}
		b.Endpoints[e.name] = ep
	}
}

// addEndpointPolicies (private network) makes every endpoint a perimeter:
// it admits only the role that uses it — the tools function's on DynamoDB,
// S3, SQS, ECS and Secrets Manager, the task execution role's on ECR and
// Logs — acting on resources of this account. So a sandboxed command
// holding any other credentials (another account's, or a stolen key of
// this one) can write nowhere through them, and the task role reaches
// nothing. What each role may do stays its IAM policy's business
// (policies.go): the endpoint policy only says who and whose. Two AWS-owned
// exceptions: ECR's GetAuthorizationToken names no resource, and Fargate
// fetches image layers from ECR's own bucket
// (prod-<region>-starport-layer-bucket) through the S3 gateway.
func (s *Stack) addEndpointPolicies() {
	b := s.Sandbox
	if b == nil || b.Network != NetworkPrivate {
		return
	}
	account := s.Account()
	anyone := &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()}
	scoped := func(sid, service string, role *string, resourceAccount bool, actions ...string) awsiam.PolicyStatement {
		cond := map[string]interface{}{"aws:PrincipalArn": role, "aws:PrincipalAccount": account}
		if resourceAccount {
			cond["aws:ResourceAccount"] = account
		}
		if len(actions) == 0 {
			actions = []string{service + ":*"}
		}
		return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid: jsii.String(sid), Principals: anyone, Actions: jsii.Strings(actions...), Resources: jsii.Strings("*"),
			Conditions: &map[string]interface{}{"StringEquals": cond},
		})
	}
	tools, exec := s.Roles[FnTools].RoleArn(), b.Task.ExecutionRole().RoleArn()
	b.Gateways["dynamodb"].AddToPolicy(scoped("ToolsOnThisAccount", "dynamodb", tools, true))
	b.Gateways["s3"].AddToPolicy(scoped("ToolsOnThisAccount", "s3", tools, true))
	b.Gateways["s3"].AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid: jsii.String("EcrImageLayers"), Principals: anyone, Actions: jsii.Strings("s3:GetObject"),
		Resources: jsii.Strings("arn:" + *s.Partition() + ":s3:::prod-" + *s.Region() + "-starport-layer-bucket/*"),
	}))
	for _, name := range []string{"sqs", "ecs", "secretsmanager"} {
		b.Endpoints[name].AddToPolicy(scoped("ToolsOnThisAccount", name, tools, true))
	}
	for _, name := range []string{"ecr", "ecr.dkr"} {
		b.Endpoints[name].AddToPolicy(scoped("PullOnThisAccount", "ecr", exec, true))
		b.Endpoints[name].AddToPolicy(scoped("PullLogin", "ecr", exec, false, "ecr:GetAuthorizationToken"))
	}
	b.Endpoints["logs"].AddToPolicy(scoped("LogsOnThisAccount", "logs", exec, true))
}
