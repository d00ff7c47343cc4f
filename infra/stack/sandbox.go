package stack

import (
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
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
	sandboxDockerfile  = "functions/sandboxd/Dockerfile"
	sandboxBinary      = "dist/sandboxd/bootstrap"
)

// Sandbox is the Fargate side: a VPC without NAT or internet gateway, the
// endpoints its two clients need, the cluster, the sandboxd task and the
// security groups that let only the tools function reach sandboxd.
type Sandbox struct {
	Vpc       awsec2.Vpc
	Endpoints map[string]awsec2.InterfaceVpcEndpoint // by short name: sqs, ecr, ecr.dkr, logs, ecs, secretsmanager
	Cluster   awsecs.Cluster
	Task      awsecs.FargateTaskDefinition
	TaskRole  awsiam.Role
	ToolsSG   awsec2.SecurityGroup // the tools function's ENIs
	TaskSG    awsec2.SecurityGroup // sandboxd tasks
	Key       awssecretsmanager.Secret
	Logs      awslogs.LogGroup
}

func (s *Stack) addSandbox() {
	b := &Sandbox{Endpoints: map[string]awsec2.InterfaceVpcEndpoint{}}
	s.Sandbox = b
	// Private isolated subnets only: no NAT gateway, no internet gateway, no
	// route out. Everything the tools function and the tasks reach is a VPC
	// endpoint below.
	b.Vpc = awsec2.NewVpc(s.Stack, jsii.String("Vpc"), &awsec2.VpcProps{
		IpAddresses: awsec2.IpAddresses_Cidr(jsii.String("10.40.0.0/16")),
		MaxAzs:      jsii.Number(maxAZs),
		NatGateways: jsii.Number(0),
		SubnetConfiguration: &[]*awsec2.SubnetConfiguration{{
			Name: jsii.String("sandbox"), SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED, CidrMask: jsii.Number(20),
		}},
		RestrictDefaultSecurityGroup: jsii.Bool(false), // true adds a custom-resource function; nothing uses the default group
	})
	// The tools function's ENIs. Egress is open inside a VPC with no route
	// out: it reaches the endpoints and sandboxd, nothing else exists.
	b.ToolsSG = awsec2.NewSecurityGroup(s.Stack, jsii.String("ToolsSG"), &awsec2.SecurityGroupProps{
		Vpc: b.Vpc, AllowAllOutbound: jsii.Bool(true), Description: jsii.String("cairn tools function"),
	})
	// The sandbox tasks: sandboxd's control port admits only the tools
	// function. Egress stays open for the image pull (ECR, S3 gateway) and
	// logs; with no route out, sandboxed commands reach no internet.
	b.TaskSG = awsec2.NewSecurityGroup(s.Stack, jsii.String("SandboxSG"), &awsec2.SecurityGroupProps{
		Vpc: b.Vpc, AllowAllOutbound: jsii.Bool(true), Description: jsii.String("cairn sandboxd tasks"),
	})
	b.TaskSG.AddIngressRule(b.ToolsSG, awsec2.Port_Tcp(jsii.Number(SandboxPort)), jsii.String("sandboxd control port, from the tools function only"), nil)
	s.addEndpoints(b)

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
		Environment: &map[string]*string{
			"SANDBOXD_IDLE_TIMEOUT": jsii.String(strconv.Itoa(SandboxIdleSeconds) + "s"),
		},
		Logging: awsecs.LogDriver_AwsLogs(&awsecs.AwsLogDriverProps{LogGroup: b.Logs, StreamPrefix: jsii.String("sandboxd")}),
	})
}

// sandboxImage: the Dockerfile asset (build context = the repo root, cut
// down to the two files the Dockerfile uses, so synthesis stages a few MB
// and never the tree), or the given image.
func (s *Stack) sandboxImage() awsecs.ContainerImage {
	if s.Props.SandboxImage != "" {
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
	b.Vpc.AddGatewayEndpoint(jsii.String("DynamoDB"), &awsec2.GatewayVpcEndpointOptions{
		Service: awsec2.GatewayVpcEndpointAwsService_DYNAMODB(), Subnets: &[]*awsec2.SubnetSelection{isolated},
	})
	// S3: the tools function's claim checks, and the image layers of the
	// sandboxd pull (ECR stores layers in S3).
	b.Vpc.AddGatewayEndpoint(jsii.String("S3"), &awsec2.GatewayVpcEndpointOptions{
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
		ep := awsec2.NewInterfaceVpcEndpoint(s.Stack, jsii.String(e.id), &awsec2.InterfaceVpcEndpointProps{
			Vpc: b.Vpc, Service: e.svc, PrivateDnsEnabled: jsii.Bool(true), Open: jsii.Bool(false),
			Subnets: &awsec2.SubnetSelection{Subnets: &subnets},
		})
		for _, c := range e.clients {
			ep.Connections().AllowDefaultPortFrom(c, jsii.String("HTTPS from "+*c.Node().Id()))
		}
		b.Endpoints[e.name] = ep
	}
}
