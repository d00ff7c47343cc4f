package stack_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/jsii-runtime-go"

	"github.com/cairnrun/cairn/infra/stack"
)

// fargate returns the stacks with Fargate sandboxes on the private network
// (dev and prod); publicNet is the one on the public network.
func fargate(t *testing.T) []*tmpl {
	dev, prod, _ := stacks(t)
	return []*tmpl{dev, prod}
}

// ingress lists the rules admitting traffic into a security group: its
// inline rules and the separate AWS::EC2::SecurityGroupIngress resources.
func (tp *tmpl) ingress(sgID string) []map[string]any {
	var out []map[string]any
	for _, r := range list(tp.props(sgID)["SecurityGroupIngress"]) {
		out = append(out, obj(r))
	}
	for _, id := range tp.ofType("AWS::EC2::SecurityGroupIngress") {
		if p := tp.props(id); js(p["GroupId"]) == getAtt(sgID, "GroupId") {
			out = append(out, p)
		}
	}
	return out
}

// No NAT gateway, no internet gateway, no route out, no public subnet.
func TestNoNATGatewayAndNoRouteOut(t *testing.T) {
	for _, tp := range fargate(t) {
		for _, typ := range []string{"AWS::EC2::NatGateway", "AWS::EC2::InternetGateway", "AWS::EC2::EgressOnlyInternetGateway", "AWS::EC2::EIP"} {
			if ids := tp.ofType(typ); len(ids) > 0 {
				t.Errorf("%s: %s %v", tp.name, typ, ids)
			}
		}
		for _, id := range tp.ofType("AWS::EC2::Route") {
			t.Errorf("%s: route %s %s (isolated subnets have only the local route and gateway endpoints)", tp.name, id, js(tp.props(id)))
		}
		subnets := tp.ofType("AWS::EC2::Subnet")
		if len(subnets) != 2 {
			t.Errorf("%s: subnets %v, want two (two AZs)", tp.name, subnets)
		}
		for _, id := range subnets {
			if tp.props(id)["MapPublicIpOnLaunch"] != false {
				t.Errorf("%s subnet %s: MapPublicIpOnLaunch %v", tp.name, id, tp.props(id)["MapPublicIpOnLaunch"])
			}
		}
	}
}

// The endpoints that replace a NAT gateway exist: DynamoDB and S3 gateways,
// interface endpoints for SQS, ECS, Secrets Manager, ECR (API and registry)
// and CloudWatch Logs — in one AZ in dev, two in prod.
func TestVPCEndpoints(t *testing.T) {
	for _, tp := range fargate(t) {
		kinds := map[string]string{}
		for _, id := range tp.ofType("AWS::EC2::VPCEndpoint") {
			p := tp.props(id)
			// com.amazonaws.<region>.<service>, as Fn::Join ["", [prefix, region, ".<service>"]]
			parts := list(list(obj(p["ServiceName"])["Fn::Join"])[1])
			if len(parts) == 0 {
				t.Errorf("%s endpoint %s: ServiceName %s", tp.name, id, js(p["ServiceName"]))
				continue
			}
			svc := strings.TrimPrefix(str(parts[len(parts)-1]), ".")
			kinds[svc] = str(p["VpcEndpointType"])
			if p["VpcEndpointType"] == "Interface" {
				if p["PrivateDnsEnabled"] != true || len(list(p["SubnetIds"])) != tp.s.Props.EndpointAZs {
					t.Errorf("%s endpoint %s: private DNS %v, %d subnets (want %d)", tp.name, svc, p["PrivateDnsEnabled"], len(list(p["SubnetIds"])), tp.s.Props.EndpointAZs)
				}
			}
		}
		want := map[string]string{
			"dynamodb": "Gateway", "s3": "Gateway",
			"sqs": "Interface", "ecs": "Interface", "secretsmanager": "Interface",
			"ecr.api": "Interface", "ecr.dkr": "Interface", "logs": "Interface",
		}
		if js(kinds) != js(want) {
			t.Errorf("%s endpoints %v, want %v", tp.name, kinds, want)
		}
	}
	dev, prod, _ := stacks(t)
	if dev.s.Props.EndpointAZs != 1 || prod.s.Props.EndpointAZs != 2 {
		t.Errorf("endpoint AZs dev %d prod %d, want 1 and 2", dev.s.Props.EndpointAZs, prod.s.Props.EndpointAZs)
	}
}

// Each interface endpoint admits HTTPS only from the security groups that
// use it: the tools function for SQS, ECS and Secrets Manager; the sandbox
// tasks for ECR and Logs. Sandboxed code cannot reach SQS or Secrets Manager.
func TestEndpointsAdmitOnlyTheirClients(t *testing.T) {
	for _, tp := range fargate(t) {
		b := tp.s.Sandbox
		tools, tasks := getAtt(tp.id(b.ToolsSG), "GroupId"), getAtt(tp.id(b.TaskSG), "GroupId")
		clients := map[string]string{"sqs": tools, "ecs": tools, "secretsmanager": tools, "ecr": tasks, "ecr.dkr": tasks, "logs": tasks}
		for name, ep := range b.Endpoints {
			sgs := list(tp.props(tp.id(ep))["SecurityGroupIds"])
			if len(sgs) != 1 {
				t.Fatalf("%s endpoint %s: security groups %s", tp.name, name, js(sgs))
			}
			sg, _ := list(obj(sgs[0])["Fn::GetAtt"])[0].(string)
			rules := tp.ingress(sg)
			if len(rules) != 1 || js(rules[0]["SourceSecurityGroupId"]) != clients[name] ||
				num(rules[0]["FromPort"]) != 443 || num(rules[0]["ToPort"]) != 443 {
				t.Errorf("%s endpoint %s: ingress %s, want only 443 from %s", tp.name, name, js(rules), clients[name])
			}
		}
	}
}

// The sandbox security group's only ingress is TCP 7070 from the tools
// function's security group.
func TestSandboxIngressOnlyFromToolsOnControlPort(t *testing.T) {
	for _, tp := range fargate(t) {
		b := tp.s.Sandbox
		rules := tp.ingress(tp.id(b.TaskSG))
		if len(rules) != 1 {
			t.Fatalf("%s sandbox SG: %d ingress rules %s, want one", tp.name, len(rules), js(rules))
		}
		r := rules[0]
		if r["IpProtocol"] != "tcp" || num(r["FromPort"]) != stack.SandboxPort || num(r["ToPort"]) != stack.SandboxPort ||
			js(r["SourceSecurityGroupId"]) != getAtt(tp.id(b.ToolsSG), "GroupId") || r["CidrIp"] != nil {
			t.Errorf("%s sandbox SG ingress %s, want tcp %d from the tools SG", tp.name, js(r), stack.SandboxPort)
		}
	}
}

// sandboxd runs as an arm64 Fargate task (awsvpc) from the Dockerfile
// asset, its control port and idle timeout set, logging to the stack.
func TestSandboxTaskDefinitionArm64Fargate(t *testing.T) {
	for _, tp := range append(fargate(t), publicNet(t)) {
		must(t, tp.name+" task definition", func() {
			tp.a.HasResourceProperties(jsii.String("AWS::ECS::TaskDefinition"), map[string]any{
				"RequiresCompatibilities": []any{"FARGATE"},
				"NetworkMode":             "awsvpc",
				"RuntimePlatform":         map[string]any{"CpuArchitecture": "ARM64", "OperatingSystemFamily": "LINUX"},
				"TaskRoleArn":             map[string]any{"Fn::GetAtt": []any{tp.id(tp.s.Sandbox.TaskRole), "Arn"}},
			})
		})
		td := tp.props(tp.id(tp.s.Sandbox.Task))
		cs := list(td["ContainerDefinitions"])
		if len(cs) != 1 {
			t.Fatalf("%s: containers %s", tp.name, js(cs))
		}
		c := obj(cs[0])
		// dev builds the asset; prod names an ECR repository, public a public
		// image (sandboxImage).
		image := "container-assets"
		if tp.s.Props.SandboxImage != "" {
			image = "/cairn/sandboxd:v1"
		}
		if c["Name"] != stack.SandboxContainer || js(c["PortMappings"]) != `[{"ContainerPort":7070,"Protocol":"tcp"}]` ||
			!strings.Contains(js(c["Environment"]), "SANDBOXD_IDLE_TIMEOUT") ||
			!strings.Contains(js(c["Image"]), image) || obj(c["LogConfiguration"])["LogDriver"] != "awslogs" {
			t.Errorf("%s container %s", tp.name, js(c))
		}
		// sandboxd is root in the task (no User) so that its commands run
		// as the image's sandbox user, away from the call ledger.
		if !strings.Contains(js(c["Environment"]), `{"Name":"SANDBOXD_RUN_AS","Value":"`+stack.SandboxRunAs+`"}`) || c["User"] != nil {
			t.Errorf("%s container: want SANDBOXD_RUN_AS=%s and no User: %s", tp.name, stack.SandboxRunAs, js(c))
		}
	}
}

// Sandboxed commands get the task role's credentials, so it has none.
func TestSandboxTaskRoleHasNoPermissions(t *testing.T) {
	for _, tp := range append(fargate(t), publicNet(t)) {
		role := tp.id(tp.s.Sandbox.TaskRole)
		if sts := tp.statements(role); len(sts) > 0 || tp.props(role)["ManagedPolicyArns"] != nil {
			t.Errorf("%s task role: statements %s managed %v", tp.name, js(sts), tp.props(role)["ManagedPolicyArns"])
		}
	}
}

// Only the tools function is in the VPC: its isolated subnets, its own
// security group.
func TestToolsFunctionInVPC(t *testing.T) {
	for _, tp := range fargate(t) {
		var subnets []string
		for _, id := range tp.ofType("AWS::EC2::Subnet") {
			subnets = append(subnets, ref(id))
		}
		for _, fn := range stack.Functions {
			vpc := obj(tp.props(tp.id(tp.s.Functions[fn]))["VpcConfig"])
			if fn != stack.FnTools {
				if vpc != nil {
					t.Errorf("%s %s is in the VPC", tp.name, fn)
				}
				continue
			}
			var got []string
			for _, s := range list(vpc["SubnetIds"]) {
				got = append(got, js(s))
			}
			if js(got) != js(subnets) || js(vpc["SecurityGroupIds"]) != "["+getAtt(tp.id(tp.s.Sandbox.ToolsSG), "GroupId")+"]" {
				t.Errorf("%s tools VpcConfig %s", tp.name, js(vpc))
			}
		}
	}
}

// tools may run only the sandboxd task definition in its cluster, watch and
// stop that cluster's tasks, and pass only the task's two roles to ECS; no
// other function touches ECS.
func TestToolsMayRunOnlyTheSandboxTask(t *testing.T) {
	for _, tp := range append(fargate(t), publicNet(t)) {
		b := tp.s.Sandbox
		tasks := ref(tp.id(b.Cluster)) + `,"/*"`
		seen := map[string]bool{}
		for _, s := range tp.statements(tp.id(tp.s.Roles[stack.FnTools])) {
			for _, a := range s.Actions {
				seen[a] = true
			}
			switch {
			case s.has("ecs:RunTask"):
				if js(s.Resources) != js([]string{ref(tp.id(b.Task))}) || !strings.Contains(js(s.Condition), getAtt(tp.id(b.Cluster), "Arn")) {
					t.Errorf("%s tools RunTask on %s if %s", tp.name, js(s.Resources), js(s.Condition))
				}
			case s.has("ecs:DescribeTasks"), s.has("ecs:StopTask"), s.has("ecs:TagResource"):
				if len(s.Resources) != 1 || !strings.Contains(s.Resources[0], ":task/\","+tasks) {
					t.Errorf("%s tools %v on %v, want the cluster's tasks", tp.name, s.Actions, s.Resources)
				}
			case s.has("iam:PassRole"):
				want := []string{getAtt(tp.id(b.TaskRole), "Arn"), getAtt(tp.id(b.Task.ExecutionRole()), "Arn")}
				if js(s.Resources) != js(want) || !strings.Contains(js(s.Condition), "ecs-tasks.amazonaws.com") {
					t.Errorf("%s tools PassRole %s %s", tp.name, js(s.Resources), js(s.Condition))
				}
			}
		}
		for _, a := range []string{"ecs:RunTask", "ecs:DescribeTasks", "ecs:StopTask", "iam:PassRole"} {
			if !seen[a] {
				t.Errorf("%s tools: no %s", tp.name, a)
			}
		}
		for _, fn := range stack.Functions {
			if fn == stack.FnTools {
				continue
			}
			for _, a := range tp.actions(tp.id(tp.s.Roles[fn])) {
				if strings.HasPrefix(a, "ecs:") || strings.HasPrefix(a, "ec2:") {
					t.Errorf("%s %s may %s", tp.name, fn, a)
				}
			}
		}
	}
}

// The LocalStack variant has no VPC, ECS or endpoints (its free edition
// runs none of them); tools keeps directories in the function instead.
func TestLocalVariantHasNoSandboxInfrastructure(t *testing.T) {
	_, _, local := stacks(t)
	for _, typ := range []string{"AWS::EC2::VPC", "AWS::EC2::VPCEndpoint", "AWS::ECS::Cluster", "AWS::ECS::TaskDefinition", "AWS::SecretsManager::Secret"} {
		if ids := local.ofType(typ); len(ids) > 0 {
			t.Errorf("local: %s %v", typ, ids)
		}
	}
	if slices.ContainsFunc(local.ofType("AWS::Lambda::Function"), func(id string) bool { return local.props(id)["VpcConfig"] != nil }) {
		t.Errorf("local: a function is in a VPC")
	}
}
