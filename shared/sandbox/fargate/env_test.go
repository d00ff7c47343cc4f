package fargate_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/ecs/types"

	"github.com/cairnrun/cairn/shared/testkit/awstest"
)

// ecsEnv is what a test needs on the AWS endpoint: an ECS client, a
// cluster and a task definition of its own, and a subnet and security group
// of the endpoint's default VPC.
type ecsEnv struct {
	client         *ecs.Client
	cluster        string
	taskDefinition string
	subnet, sg     string
	cfg            aws.Config // the endpoint's (EC2 calls of the public network tests)
}

const containerName = "sandboxd"

func newECSEnv(t *testing.T) *ecsEnv {
	t.Helper()
	cfg := awstest.Config(t)
	ctx := context.Background()
	keepTasksRunning(t, cfg)
	ecsCfg := cfg.Copy()
	ecsCfg.HTTPClient = containerSizesAsStrings{next: cfg.HTTPClient}
	client := ecs.NewFromConfig(ecsCfg)
	env := &ecsEnv{client: client, cluster: awstest.Name(t, "cairn-sandbox"), cfg: cfg}
	if _, err := client.CreateCluster(ctx, &ecs.CreateClusterInput{ClusterName: aws.String(env.cluster)}); err != nil {
		t.Fatalf("creating cluster: %v", err)
	}
	t.Cleanup(func() {
		client.DeleteCluster(context.Background(), &ecs.DeleteClusterInput{Cluster: aws.String(env.cluster)})
	})
	td, err := client.RegisterTaskDefinition(ctx, &ecs.RegisterTaskDefinitionInput{
		Family:                  aws.String(awstest.Name(t, "cairn-sandboxd")),
		NetworkMode:             types.NetworkModeAwsvpc,
		RequiresCompatibilities: []types.Compatibility{types.CompatibilityFargate},
		Cpu:                     aws.String("512"),
		Memory:                  aws.String("1024"),
		RuntimePlatform:         &types.RuntimePlatform{CpuArchitecture: types.CPUArchitectureArm64, OperatingSystemFamily: types.OSFamilyLinux},
		ContainerDefinitions: []types.ContainerDefinition{{
			Name:      aws.String(containerName),
			Image:     aws.String("cairn/sandboxd:test"),
			Essential: aws.Bool(true),
			// moto needs a container-level memory to place the task
			// (it sums them; Fargate itself needs only the task's).
			Memory:       aws.Int32(1024),
			PortMappings: []types.PortMapping{{ContainerPort: aws.Int32(7070)}},
		}},
	})
	if err != nil {
		t.Fatalf("registering task definition: %v", err)
	}
	env.taskDefinition = aws.ToString(td.TaskDefinition.TaskDefinitionArn)
	env.subnet = ec2First(t, cfg, url.Values{"Action": {"DescribeSubnets"}}, "subnet")
	env.sg = ec2First(t, cfg, url.Values{"Action": {"DescribeSecurityGroups"},
		"Filter.1.Name": {"group-name"}, "Filter.1.Value.1": {"default"}}, "sg")
	return env
}

// keepTasksRunning sets moto's ECS task lifecycle to stay RUNNING until
// StopTask, as a real task does. By default moto advances a task one state
// (RUNNING → DEACTIVATING → … → STOPPED) on every DescribeTasks, so the
// second look at a task would already see it going away. The setting is
// moto's documented state-manager API and concerns only ECS tasks; the
// endpoint is shared with other packages, none of which runs ECS tasks.
func keepTasksRunning(t *testing.T, cfg aws.Config) {
	t.Helper()
	ep := strings.TrimRight(aws.ToString(cfg.BaseEndpoint), "/")
	body := `{"model_name": "ecs::task", "transition": {"progression": "manual", "times": 1000000000}}`
	resp, err := cfg.HTTPClient.Do(mustRequest(t, ep+"/moto-api/state-manager/set-transition", body))
	if err != nil {
		t.Fatalf("configuring moto's ECS task lifecycle: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Logf("the endpoint has no moto state manager (%s): assuming tasks stay RUNNING", resp.Status)
		return
	}
	t.Cleanup(func() {
		resp, err := cfg.HTTPClient.Do(mustRequest(t, ep+"/moto-api/state-manager/unset-transition", `{"model_name": "ecs::task"}`))
		if err == nil {
			resp.Body.Close()
		}
	})
}

func mustRequest(t *testing.T, u, body string) *http.Request {
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// ec2First calls an EC2 Describe action with a signed query request (the
// EC2 SDK module is not a dependency of this repository) and returns the
// first id (subnetId or groupId) of the answer that starts with prefix.
func ec2First(t *testing.T, cfg aws.Config, form url.Values, prefix string) string {
	t.Helper()
	ctx := context.Background()
	form.Set("Version", "2016-11-15")
	body := form.Encode()
	req, err := http.NewRequest(http.MethodPost, strings.TrimRight(aws.ToString(cfg.BaseEndpoint), "/")+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	creds, err := cfg.Credentials.Retrieve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(body))
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "ec2", cfg.Region, time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := cfg.HTTPClient.Do(req)
	if err != nil {
		t.Fatalf("EC2 %s: %v", form.Get("Action"), err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out struct {
		Subnets []string `xml:"subnetSet>item>subnetId"`
		Groups  []string `xml:"securityGroupInfo>item>groupId"`
	}
	if err := xml.NewDecoder(bytes.NewReader(raw)).Decode(&out); err != nil {
		t.Fatalf("EC2 %s: %v\n%s", form.Get("Action"), err, raw)
	}
	for _, id := range append(out.Subnets, out.Groups...) {
		if strings.HasPrefix(id, prefix) {
			return id
		}
	}
	t.Fatalf("EC2 %s returned no %s id: %s", form.Get("Action"), prefix, raw)
	return ""
}

// containerSizesAsStrings works around moto 5.2.1 writing a task's
// containers[].cpu and containers[].memory as JSON numbers where the ECS API
// (and so the SDK's strict deserializer) has strings ("cpu": "256"): it
// rewrites those two fields of ECS responses to strings and changes nothing
// else. Without it every RunTask/DescribeTasks/StopTask response fails to
// deserialize.
type containerSizesAsStrings struct{ next aws.HTTPClient }

func (c containerSizesAsStrings) Do(req *http.Request) (*http.Response, error) {
	resp, err := c.next.Do(req)
	if err != nil || !strings.HasPrefix(req.Header.Get("X-Amz-Target"), "AmazonEC2ContainerService") {
		return resp, err
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc map[string]any
	if dec.Decode(&doc) != nil {
		return resp, nil
	}
	var tasks []any
	if ts, ok := doc["tasks"].([]any); ok {
		tasks = ts
	}
	if t, ok := doc["task"]; ok {
		tasks = append(tasks, t)
	}
	for _, t := range tasks {
		tm, _ := t.(map[string]any)
		cs, _ := tm["containers"].([]any)
		for _, ct := range cs {
			cm, _ := ct.(map[string]any)
			for _, k := range []string{"cpu", "memory"} {
				if n, ok := cm[k].(json.Number); ok {
					cm[k] = n.String()
				}
			}
		}
	}
	fixed, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(fixed))
	resp.ContentLength = int64(len(fixed))
	resp.Header.Set("Content-Length", strconv.Itoa(len(fixed)))
	return resp, nil
}
