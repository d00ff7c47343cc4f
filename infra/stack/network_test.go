package stack_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/infra/stack"
)

// The sandbox network (docs/DEPLOY.md "Sandbox network"): private by
// default — isolated subnets, endpoints with account-scoped policies —
// until the runtime speaks TLS to sandboxd; public (network=public) costs
// nothing idle.

// endpointService is an endpoint's short service name: com.amazonaws.<region>.<service>,
// synthesized as Fn::Join ["", [prefix, region, ".<service>"]].
func endpointService(p map[string]any) string {
	parts := list(list(obj(p["ServiceName"])["Fn::Join"])[1])
	if len(parts) == 0 {
		return ""
	}
	return strings.TrimPrefix(str(parts[len(parts)-1]), ".")
}

// The default is the public network (the public variant sets none);
// network=private opts into the endpoints; anything else, and an image the
// network cannot pull, is refused.
func TestSandboxNetworkChoice(t *testing.T) {
	dev, prod, _ := stacks(t)
	if dev.s.Props.Network != stack.NetworkPrivate || prod.s.Props.Network != stack.NetworkPrivate || publicNet(t).s.Props.Network != stack.NetworkPublic {
		t.Errorf("networks dev %q prod %q public %q", dev.s.Props.Network, prod.s.Props.Network, publicNet(t).s.Props.Network)
	}
	for ctx, want := range map[string]string{"public": stack.NetworkPublic, "private": stack.NetworkPrivate} {
		p, err := stack.FromContext(func(k string) string { return map[string]string{"network": ctx}[k] })
		if err != nil || p.Network != want {
			t.Errorf("FromContext network=%q: %q, %v; want %q", ctx, p.Network, err, want)
		}
	}
	ok := stack.Props{Assets: filepath.Join(root, "dist"), ImageContext: root, Network: stack.NetworkPrivate}
	for _, c := range []struct {
		name string
		edit func(*stack.Props)
		want string
	}{
		{"unknown network", func(p *stack.Props) { p.Network = "vpn" }, `network "vpn"`},
		{"a public image on the private network", func(p *stack.Props) { p.SandboxImage = "docker.io/library/alpine:3" }, "only an ECR image"},
		{"an ECR Public image on the private network", func(p *stack.Props) { p.SandboxImage = publicImage }, "or use network=public"},
		{"no image reference", func(p *stack.Props) { p.Network, p.SandboxImage = stack.NetworkPublic, "alpine 3" }, "not an image reference"},
	} {
		p := ok
		c.edit(&p)
		if _, err := stack.New(nil, "bad", p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// Resource types billed by the hour (or a fixed monthly fee) whether used
// or not. None may be in the public stack; in the private ones only the
// interface endpoints, which are the idle cost docs/DEPLOY.md states.
var hourly = map[string]string{
	"AWS::EC2::NatGateway":                      "NAT gateway hours",
	"AWS::EC2::EIP":                             "public IPv4 hours",
	"AWS::EC2::Instance":                        "instance hours",
	"AWS::EC2::Host":                            "dedicated host hours",
	"AWS::EC2::EC2Fleet":                        "instance hours",
	"AWS::EC2::SpotFleet":                       "instance hours",
	"AWS::AutoScaling::AutoScalingGroup":        "instance hours",
	"AWS::EC2::TransitGateway":                  "attachment hours",
	"AWS::EC2::TransitGatewayAttachment":        "attachment hours",
	"AWS::EC2::TransitGatewayVpcAttachment":     "attachment hours",
	"AWS::EC2::VPNConnection":                   "connection hours",
	"AWS::EC2::ClientVpnEndpoint":               "association hours",
	"AWS::EC2::VerifiedAccessEndpoint":          "endpoint hours",
	"AWS::NetworkFirewall::Firewall":            "endpoint hours",
	"AWS::Route53Resolver::ResolverEndpoint":    "ENI hours",
	"AWS::GlobalAccelerator::Accelerator":       "accelerator hours",
	"AWS::ElasticLoadBalancing::LoadBalancer":   "load balancer hours",
	"AWS::ElasticLoadBalancingV2::LoadBalancer": "load balancer hours",
	"AWS::RDS::DBInstance":                      "instance hours",
	"AWS::RDS::DBCluster":                       "instance / ACU hours",
	"AWS::RDS::DBProxy":                         "vCPU hours",
	"AWS::ElastiCache::CacheCluster":            "node hours",
	"AWS::ElastiCache::ReplicationGroup":        "node hours",
	"AWS::ElastiCache::ServerlessCache":         "minimum storage",
	"AWS::MemoryDB::Cluster":                    "node hours",
	"AWS::DAX::Cluster":                         "node hours",
	"AWS::Redshift::Cluster":                    "node hours",
	"AWS::OpenSearchService::Domain":            "instance hours",
	"AWS::Elasticsearch::Domain":                "instance hours",
	"AWS::MSK::Cluster":                         "broker hours",
	"AWS::DocDB::DBInstance":                    "instance hours",
	"AWS::Neptune::DBInstance":                  "instance hours",
	"AWS::EKS::Cluster":                         "cluster hours",
	"AWS::EKS::Nodegroup":                       "instance hours",
	"AWS::Kinesis::Stream":                      "shard / stream hours",
	"AWS::SageMaker::Endpoint":                  "instance hours",
	"AWS::SageMaker::NotebookInstance":          "instance hours",
	"AWS::AppRunner::Service":                   "provisioned instance hours",
	"AWS::KMS::Key":                             "$1/month per key",
}

// idleFree are the types the stacks use that cost nothing without traffic
// (beyond storage) — or a fixed monthly fee docs/DEPLOY.md counts
// (alarms, the secret). A type in neither list fails the test: classify it.
var idleFree = map[string]string{
	"AWS::ApiGatewayV2::Api": "per request", "AWS::ApiGatewayV2::Stage": "per request", "AWS::ApiGatewayV2::Route": "",
	"AWS::ApiGatewayV2::Integration": "", "AWS::ApiGatewayV2::Authorizer": "",
	"AWS::CloudWatch::Alarm":     "$0.10 per metric per month: counted in DEPLOY.md",
	"AWS::CloudWatch::Dashboard": "$3 per month beyond the account's three free dashboards: infra/README.md",
	"AWS::DynamoDB::Table":       "on demand (checked below): requests and storage",
	"AWS::EC2::InternetGateway":  "free; data transfer out per GB", "AWS::EC2::VPCGatewayAttachment": "",
	"AWS::EC2::Route": "", "AWS::EC2::RouteTable": "", "AWS::EC2::SubnetRouteTableAssociation": "",
	"AWS::EC2::SecurityGroup": "", "AWS::EC2::SecurityGroupEgress": "", "AWS::EC2::SecurityGroupIngress": "",
	"AWS::EC2::Subnet": "", "AWS::EC2::VPC": "",
	"AWS::EC2::VPCEndpoint": "gateway endpoints are free; interface endpoints are checked below",
	"AWS::ECS::Cluster":     "Fargate bills running tasks only", "AWS::ECS::TaskDefinition": "",
	"AWS::Events::Rule": "per event", "AWS::IAM::Policy": "", "AWS::IAM::Role": "",
	"AWS::Lambda::EventInvokeConfig": "", "AWS::Lambda::EventSourceMapping": "per poll request (DEPLOY.md)",
	"AWS::Lambda::Function": "per request and GB-s (provisioned concurrency: none, checked below)", "AWS::Lambda::Permission": "",
	"AWS::Lambda::Url":    "per request and the function's GB-s (streamed bytes past 6 MB per response)",
	"AWS::Logs::LogGroup": "per GB", "AWS::S3::Bucket": "per GB and request", "AWS::S3::BucketPolicy": "",
	"AWS::Scheduler::ScheduleGroup": "per invocation", "AWS::SecretsManager::Secret": "$0.40 per month: counted in DEPLOY.md",
	"AWS::SNS::Subscription": "", "AWS::SNS::Topic": "per publish", "AWS::SQS::Queue": "per request",
	"AWS::SQS::QueuePolicy": "",
}

// hourlyBilled lists a stack's resources billed whether used or not.
func hourlyBilled(tp *tmpl) []string {
	var out []string
	for id, r := range tp.res {
		p := r.Properties
		why := hourly[r.Type]
		switch r.Type {
		case "AWS::EC2::VPCEndpoint":
			if t := str(p["VpcEndpointType"]); t != "" && t != "Gateway" {
				why = t + " endpoint hours per AZ"
			}
		case "AWS::ECS::Service":
			if d, ok := p["DesiredCount"].(float64); !ok || d > 0 {
				why = "a Fargate service's running tasks" // absent DesiredCount: 1
			}
		case "AWS::DynamoDB::Table", "AWS::DynamoDB::GlobalTable":
			if p["BillingMode"] != "PAY_PER_REQUEST" {
				why = "provisioned capacity hours"
			}
		case "AWS::Lambda::Version", "AWS::Lambda::Alias":
			if p["ProvisionedConcurrencyConfig"] != nil {
				why = "provisioned concurrency hours"
			}
		case "AWS::ApiGateway::Stage":
			if p["CacheClusterEnabled"] == true {
				why = "cache hours"
			}
		}
		if why != "" {
			out = append(out, fmt.Sprintf("%s %s (%s)", r.Type, id, why))
		}
	}
	sort.Strings(out)
	return out
}

// The public network's stack bills nothing by the hour: no NAT gateway, no
// interface endpoint, no load balancer, instance, cache or database, no
// service keeping a task running, no provisioned capacity. The private
// ones bill exactly their six interface endpoints (in EndpointAZs AZs
// each). Every resource type is classified, so a new one cannot slip in.
func TestNoHourlyBilledResourcesIdle(t *testing.T) {
	for _, tp := range all(t) {
		for id, r := range tp.res {
			_, free := idleFree[r.Type]
			if _, billed := hourly[r.Type]; !free && !billed && r.Type != "AWS::ECS::Service" {
				t.Errorf("%s %s: resource type %s is unclassified: add it to hourly or idleFree (network_test.go), and to DEPLOY.md's cost table if it bills idle", tp.name, id, r.Type)
			}
		}
		got := hourlyBilled(tp)
		var want int
		if b := tp.s.Sandbox; b != nil && b.Network == stack.NetworkPrivate {
			want = len(b.Endpoints)
			for _, g := range got {
				if !strings.HasPrefix(g, "AWS::EC2::VPCEndpoint ") {
					t.Errorf("%s: billed idle: %s", tp.name, g)
				}
			}
		}
		if len(got) != want {
			t.Errorf("%s: billed by the hour %d, want %d:\n  %s", tp.name, len(got), want, strings.Join(got, "\n  "))
		}
	}
	dev, prod, _ := stacks(t)
	if n := len(dev.s.Sandbox.Endpoints); n != 6 || dev.s.Props.EndpointAZs != 1 || prod.s.Props.EndpointAZs != 2 {
		t.Errorf("private: %d interface endpoints in dev %d / prod %d AZs; DEPLOY.md prices 6 in 1 and 2", n, dev.s.Props.EndpointAZs, prod.s.Props.EndpointAZs)
	}
}

// The fixed monthly fees DEPLOY.md's idle table counts: CloudWatch alarms
// at $0.10 per metric, Secrets Manager at $0.40 per secret.
func TestFixedMonthlyFeesMatchTheCostTable(t *testing.T) {
	for _, tp := range all(t) {
		metrics := 0
		for _, id := range tp.ofType("AWS::CloudWatch::Alarm") {
			n := 0
			for _, m := range list(tp.props(id)["Metrics"]) {
				if obj(m)["MetricStat"] != nil {
					n++
				}
			}
			metrics += max(n, 1)
		}
		cents := metrics*10 + len(tp.ofType("AWS::SecretsManager::Secret"))*40
		want := 280 // 24 alarm metrics + the sandbox key
		if tp.s.Sandbox == nil {
			want = 240
		}
		if cents != want {
			t.Errorf("%s: fixed fees %d ¢/month (%d alarm metrics, %d secrets), DEPLOY.md says %d", tp.name, cents, metrics, len(tp.ofType("AWS::SecretsManager::Secret")), want)
		}
	}
}

// Every endpoint of the private network has a policy admitting only the
// role that uses it (aws:PrincipalArn), of this account
// (aws:PrincipalAccount), acting on this account's resources
// (aws:ResourceAccount) — but for the two AWS-owned exceptions: ECR's
// login, which names no resource, and ECR's layer bucket (GetObject only).
func TestEndpointPoliciesAdmitOnlyTheirRoleOnThisAccount(t *testing.T) {
	account := js(map[string]any{"Ref": "AWS::AccountId"})
	for _, tp := range fargate(t) {
		b := tp.s.Sandbox
		tools, exec := getAtt(tp.id(tp.s.Roles[stack.FnTools]), "Arn"), getAtt(tp.id(b.Task.ExecutionRole()), "Arn")
		roles := map[string]string{"dynamodb": tools, "s3": tools, "sqs": tools, "ecs": tools, "secretsmanager": tools,
			"ecr.api": exec, "ecr.dkr": exec, "logs": exec}
		eps := tp.ofType("AWS::EC2::VPCEndpoint")
		if len(eps) != len(roles) {
			t.Errorf("%s: %d endpoints, want %d", tp.name, len(eps), len(roles))
		}
		for _, id := range eps {
			p := tp.props(id)
			svc := endpointService(p)
			sts := list(obj(p["PolicyDocument"])["Statement"])
			if len(sts) == 0 {
				t.Errorf("%s endpoint %s: no policy (the default admits anyone, on anything)", tp.name, svc)
			}
			scoped := false
			for _, raw := range sts {
				st := obj(raw)
				eq := obj(obj(st["Condition"])["StringEquals"])
				actions := list(st["Action"])
				if st["Effect"] != "Allow" || js(st["Principal"]) != `{"AWS":"*"}` || st["NotAction"] != nil || st["NotResource"] != nil {
					t.Errorf("%s endpoint %s: statement %s", tp.name, svc, js(st))
					continue
				}
				switch {
				case svc == "s3" && js(actions) == `["s3:GetObject"]` && strings.Contains(js(st["Resource"]), "-starport-layer-bucket/*") && eq == nil:
					// ECR's own layer bucket, read only.
				case strings.HasPrefix(svc, "ecr.") && js(actions) == `["ecr:GetAuthorizationToken"]` &&
					js(eq["aws:PrincipalArn"]) == roles[svc] && js(eq["aws:PrincipalAccount"]) == account && len(eq) == 2:
					// The login: no resource, so no aws:ResourceAccount.
				case js(eq["aws:PrincipalArn"]) == roles[svc] && js(eq["aws:PrincipalAccount"]) == account &&
					js(eq["aws:ResourceAccount"]) == account && len(eq) == 3 && len(obj(st["Condition"])) == 1:
					scoped = true
				default:
					t.Errorf("%s endpoint %s: statement %s, want only %s of this account on this account's resources", tp.name, svc, js(st), roles[svc])
				}
			}
			if !scoped {
				t.Errorf("%s endpoint %s: no statement admitting its role", tp.name, svc)
			}
		}
	}
}

// rules lists a security group's egress (or ingress) rules, inline and as
// separate resources, as "proto from-to peer" (peer: a CIDR or the logical
// id of a security group).
func (tp *tmpl) rules(sgID string, egress bool) []string {
	inline, typ, peerKey := "SecurityGroupEgress", "AWS::EC2::SecurityGroupEgress", "DestinationSecurityGroupId"
	if !egress {
		inline, typ, peerKey = "SecurityGroupIngress", "AWS::EC2::SecurityGroupIngress", "SourceSecurityGroupId"
	}
	var rs []map[string]any
	for _, r := range list(tp.props(sgID)[inline]) {
		rs = append(rs, obj(r))
	}
	for _, id := range tp.ofType(typ) {
		if p := tp.props(id); js(p["GroupId"]) == getAtt(sgID, "GroupId") {
			rs = append(rs, p)
		}
	}
	var out []string
	for _, r := range rs {
		peer := str(r["CidrIp"]) + str(r["CidrIpv6"]) + str(r["DestinationPrefixListId"]) + str(r["SourcePrefixListId"])
		if g := list(obj(r[peerKey])["Fn::GetAtt"]); len(g) > 0 {
			peer = str(g[0])
		}
		out = append(out, fmt.Sprintf("%v %v-%v %s", r["IpProtocol"], r["FromPort"], r["ToPort"], peer))
	}
	sort.Strings(out)
	return out
}

// Each security group's egress and ingress, exactly. Private: tools and the
// tasks send only HTTPS (the endpoints) and tools sandboxd's port; the
// endpoints send nothing (CDK's "no egress" placeholder). Public: the
// network-none tasks send only HTTPS (image pull, logs), the
// network-internet ones anything; both admit only sandboxd's port.
func TestSecurityGroupRules(t *testing.T) {
	const https, none = "tcp 443-443 0.0.0.0/0", "icmp 252-86 255.255.255.255/32" // CDK's placeholder for "no egress"
	control := fmt.Sprintf("tcp %d-%d ", stack.SandboxPort, stack.SandboxPort)
	for _, tp := range append(fargate(t), publicNet(t)) {
		b := tp.s.Sandbox
		type want struct{ egress, ingress []string }
		wants := map[string]want{}
		if b.Network == stack.NetworkPrivate {
			tools, task := tp.id(b.ToolsSG), tp.id(b.TaskSG)
			w := map[string]*want{tools: {egress: []string{https, control + task}}, task: {egress: []string{https}, ingress: []string{control + tools}}}
			for name, ep := range b.Endpoints {
				sg := str(list(obj(list(tp.props(tp.id(ep))["SecurityGroupIds"])[0])["Fn::GetAtt"])[0])
				client := task
				if name == "sqs" || name == "ecs" || name == "secretsmanager" {
					client = tools
				}
				w[client].egress = append(w[client].egress, "tcp 443-443 "+sg)
				w[sg] = &want{egress: []string{none}, ingress: []string{"tcp 443-443 " + client}}
			}
			for id, x := range w {
				wants[id] = *x
			}
		} else {
			wants[tp.id(b.TaskSG)] = want{egress: []string{https}, ingress: []string{control + "0.0.0.0/0"}}
			wants[tp.id(b.InternetSG)] = want{egress: []string{"-1 <nil>-<nil> 0.0.0.0/0"}, ingress: []string{control + "0.0.0.0/0"}}
		}
		sgs := tp.ofType("AWS::EC2::SecurityGroup")
		if len(sgs) != len(wants) {
			t.Errorf("%s: security groups %v, want %d", tp.name, sgs, len(wants))
		}
		for _, id := range sgs {
			w := wants[id]
			slices.Sort(w.egress)
			slices.Sort(w.ingress)
			if got := tp.rules(id, true); js(got) != js(w.egress) {
				t.Errorf("%s %s egress\n got %v\nwant %v", tp.name, id, got, w.egress)
			}
			if got := tp.rules(id, false); js(got) != js(w.ingress) {
				t.Errorf("%s %s ingress\n got %v\nwant %v", tp.name, id, got, w.ingress)
			}
		}
	}
}

// The public network (the default): public subnets in two AZs behind an internet gateway
// (free), no NAT, no endpoint at all; tools outside the VPC, handed the
// subnets, both groups and the network (for the runtime to assign a public
// IP and dial it with TLS); the private stacks say "private" and have no
// internet group.
func TestPublicNetwork(t *testing.T) {
	tp := publicNet(t)
	b := tp.s.Sandbox
	for typ, n := range map[string]int{"AWS::EC2::VPCEndpoint": 0, "AWS::EC2::NatGateway": 0, "AWS::EC2::EIP": 0, "AWS::EC2::InternetGateway": 1, "AWS::EC2::Subnet": 2} {
		if got := len(tp.ofType(typ)); got != n {
			t.Errorf("public: %d %s, want %d", got, typ, n)
		}
	}
	var subnets []string
	for _, id := range tp.ofType("AWS::EC2::Subnet") {
		subnets = append(subnets, id)
		if tp.props(id)["MapPublicIpOnLaunch"] != false {
			t.Errorf("public subnet %s: MapPublicIpOnLaunch %v (only RunTask's assignPublicIp gives one)", id, tp.props(id)["MapPublicIpOnLaunch"])
		}
	}
	for _, id := range tp.ofType("AWS::EC2::Route") {
		if p := tp.props(id); p["DestinationCidrBlock"] != "0.0.0.0/0" || p["GatewayId"] == nil {
			t.Errorf("public route %s %s: want only the default route to the internet gateway", id, js(p))
		}
	}
	for _, fn := range stack.Functions {
		if tp.props(tp.id(tp.s.Functions[fn]))["VpcConfig"] != nil {
			t.Errorf("public: %s is in the VPC", fn)
		}
	}
	tools := envOf(tp.props(tp.id(tp.s.Functions[stack.FnTools])))
	if js(tools[stack.EnvSandboxNetwork]) != js(stack.NetworkPublic) ||
		js(tools[stack.EnvSandboxSecurityGroups]) != getAtt(tp.id(b.TaskSG), "GroupId") ||
		js(tools[stack.EnvSandboxInternetSecurityGroups]) != getAtt(tp.id(b.InternetSG), "GroupId") {
		t.Errorf("public tools env %s", js(tools))
	}
	for _, id := range subnets {
		if !strings.Contains(js(tools[stack.EnvSandboxSubnets]), `"`+id+`"`) {
			t.Errorf("public tools %s = %s, lacks %s", stack.EnvSandboxSubnets, js(tools[stack.EnvSandboxSubnets]), id)
		}
	}
	// A public image, as it is: no ECR repository, no ECR login.
	if c := obj(list(tp.props(tp.id(b.Task))["ContainerDefinitions"])[0]); c["Image"] != publicImage {
		t.Errorf("public image %s", js(c["Image"]))
	}
	for _, tp := range fargate(t) {
		env := envOf(tp.props(tp.id(tp.s.Functions[stack.FnTools])))
		if js(env[stack.EnvSandboxNetwork]) != js(stack.NetworkPrivate) || env[stack.EnvSandboxInternetSecurityGroups] != nil {
			t.Errorf("%s tools: network %s internet group %s", tp.name, js(env[stack.EnvSandboxNetwork]), js(env[stack.EnvSandboxInternetSecurityGroups]))
		}
	}
}

// prod's sandboxImage names an ECR repository: the execution role may pull
// exactly that repository (its private network reaches ECR only).
func TestSandboxImageFromECRIsPullable(t *testing.T) {
	_, prod, _ := stacks(t)
	exec := prod.id(prod.s.Sandbox.Task.ExecutionRole())
	pulls := false
	for _, s := range prod.statements(exec) {
		if s.has("ecr:BatchGetImage") {
			pulls = true
			if len(s.Resources) != 1 || !strings.Contains(s.Resources[0], ":ecr:us-east-1:111111111111:repository/cairn/sandboxd") {
				t.Errorf("prod pull on %s", js(s.Resources))
			}
		}
	}
	if !pulls {
		t.Errorf("prod execution role cannot pull %s", prodImage)
	}
}

// The two variables the runtime does not read yet (names.go) must be the
// runtime's own names once it declares them in shared/aws/backend.
func TestPendingSandboxNetworkNames(t *testing.T) {
	if _, err := os.Stat(filepath.Join(repo, "shared")); err != nil {
		t.Skipf("runtime source not beside infra/: %v", err)
	}
	got := consts(t, "shared/aws/backend/sandboxes.go")
	for name, want := range map[string]string{
		"EnvSandboxNetwork": stack.EnvSandboxNetwork, "EnvSandboxInternetSecurityGroups": stack.EnvSandboxInternetSecurityGroups,
	} {
		if v, ok := got[name]; ok && v != want {
			t.Errorf("shared/aws/backend/sandboxes.go: %s = %q, infra sets %q", name, v, want)
		}
	}
	for v := range runtimeLiterals(t) {
		if strings.HasPrefix(v, "CAIRN_SANDBOX_") && strings.Contains(v, "NETWORK") && v != stack.EnvSandboxNetwork {
			t.Errorf("the runtime reads %s; infra sets %s", v, stack.EnvSandboxNetwork)
		}
	}
}
