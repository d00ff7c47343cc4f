package fargate_test

import (
	"context"
	"net"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/ecs/types"

	"github.com/cairnrun/cairn/shared/sandbox/fargate"
	"github.com/cairnrun/cairn/shared/sandbox/local"
	"github.com/cairnrun/cairn/shared/sandbox/placement"
	"github.com/cairnrun/cairn/shared/sandbox/server"
)

// tasks plays the containers moto does not run: each task RunTask places
// gets, when the provider first asks for its endpoint, an in-process
// sandboxd on loopback configured with the token hash from that task's
// RunTask overrides — exactly what the container would have been given. A
// stopped task's sandboxd is shut down with it.
type tasks struct {
	t     *testing.T
	mu    sync.Mutex
	byIP  map[string]*task
	byARN map[string]*task
}

type task struct {
	arn, ip, hash string
	cert, key     string // SANDBOXD_TLS_CERT/KEY of its RunTask ("": plain HTTP)
	endpoint      string
	port          int // the port the provider asked for
	shut          func()
}

func newTasks(t *testing.T) *tasks {
	return &tasks{t: t, byIP: map[string]*task{}, byARN: map[string]*task{}}
}

func (w *tasks) placed(arn, ip, hash, cert, key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	tk := &task{arn: arn, ip: ip, hash: hash, cert: cert, key: key}
	w.byIP[ip], w.byARN[arn] = tk, tk
}

// endpoint is the provider's Endpoint hook.
func (w *tasks) endpoint(ip string, port int) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	tk := w.byIP[ip]
	if tk == nil {
		w.t.Errorf("endpoint asked for %s, which no RunTask placed", ip)
		return "http://127.0.0.1:1"
	}
	if tk.endpoint == "" {
		tk.port = port
		tk.endpoint, tk.shut = w.serve(tk.hash, tk.cert, tk.key)
	}
	return tk.endpoint
}

func (w *tasks) serve(hash, cert, key string) (string, func()) {
	scheme := "http://"
	if cert != "" {
		scheme = "https://" // sandboxd given a certificate serves only TLS
	}
	srv, err := server.New(server.Config{
		Workspace: w.t.TempDir(), StateDir: w.t.TempDir(), TokenSHA256: hash,
		TLSCertPEM: []byte(cert), TLSKeyPEM: []byte(key),
		Sandbox: local.Options{Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}},
	})
	if err != nil {
		w.t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		w.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ctx, ln); err != nil {
			w.t.Errorf("loopback sandboxd: %v", err)
		}
	}()
	shut := sync.OnceFunc(func() { cancel(); <-done })
	w.t.Cleanup(shut)
	return scheme + ln.Addr().String(), shut
}

// stopped shuts the task's sandboxd, as the container dies with its task.
func (w *tasks) stopped(arn string) {
	w.mu.Lock()
	tk := w.byARN[arn]
	w.mu.Unlock()
	if tk != nil && tk.shut != nil {
		tk.shut()
	}
}

func (w *tasks) get(arn string) *task {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.byARN[arn]
}

// countingECS is the real ECS client (moto) with every call counted and
// RunTask inputs kept, feeding the loopback task world.
type countingECS struct {
	inner fargate.ECSAPI
	world *tasks

	mu        sync.Mutex
	runs      []*ecs.RunTaskInput
	describes int
	stops     []string
	// pending, when set, reports every task as PROVISIONING: moto starts
	// tasks RUNNING at once, so the way there cannot be produced otherwise.
	pending bool
	// assignPublic plays Fargate's part of AssignPublicIp ENABLED, which
	// moto's ECS ignores: it gives the task's ENI a public IPv4 address in
	// moto's EC2 and returns it.
	assignPublic func(eniID string) string
}

func (c *countingECS) RunTask(ctx context.Context, in *ecs.RunTaskInput, opts ...func(*ecs.Options)) (*ecs.RunTaskOutput, error) {
	c.mu.Lock()
	c.runs = append(c.runs, in)
	c.mu.Unlock()
	out, err := c.inner.RunTask(ctx, in, opts...)
	if err != nil {
		return out, err
	}
	for _, tk := range out.Tasks {
		ip := eniDetail(tk, "privateIPv4Address")
		if in.NetworkConfiguration.AwsvpcConfiguration.AssignPublicIp == types.AssignPublicIpEnabled {
			ip = c.assignPublic(eniDetail(tk, "networkInterfaceId")) // the task is reached only there
		}
		c.world.placed(aws.ToString(tk.TaskArn), ip, envValue(in, placement.EnvTokenSHA256),
			envValue(in, placement.EnvTLSCert), envValue(in, placement.EnvTLSKey))
	}
	return out, nil
}

func (c *countingECS) DescribeTasks(ctx context.Context, in *ecs.DescribeTasksInput, opts ...func(*ecs.Options)) (*ecs.DescribeTasksOutput, error) {
	c.mu.Lock()
	c.describes++
	pending := c.pending
	c.mu.Unlock()
	out, err := c.inner.DescribeTasks(ctx, in, opts...)
	if err == nil && pending {
		for i := range out.Tasks {
			out.Tasks[i].LastStatus = aws.String("PROVISIONING")
		}
	}
	return out, err
}

func (c *countingECS) StopTask(ctx context.Context, in *ecs.StopTaskInput, opts ...func(*ecs.Options)) (*ecs.StopTaskOutput, error) {
	c.mu.Lock()
	c.stops = append(c.stops, aws.ToString(in.Task))
	c.mu.Unlock()
	out, err := c.inner.StopTask(ctx, in, opts...)
	if err == nil {
		c.world.stopped(aws.ToString(in.Task))
	}
	return out, err
}

func (c *countingECS) counts() (runs, describes, stops int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.runs), c.describes, len(c.stops)
}

func (c *countingECS) lastRun() *ecs.RunTaskInput {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.runs) == 0 {
		return nil
	}
	return c.runs[len(c.runs)-1]
}

func (c *countingECS) stopped(arn string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.stops {
		if s == arn {
			return true
		}
	}
	return false
}

func eniDetail(t types.Task, name string) string {
	for _, a := range t.Attachments {
		for _, d := range a.Details {
			if aws.ToString(d.Name) == name {
				return aws.ToString(d.Value)
			}
		}
	}
	return ""
}

func envValue(in *ecs.RunTaskInput, name string) string {
	if in.Overrides == nil {
		return ""
	}
	for _, co := range in.Overrides.ContainerOverrides {
		for _, kv := range co.Environment {
			if aws.ToString(kv.Name) == name {
				return aws.ToString(kv.Value)
			}
		}
	}
	return ""
}
