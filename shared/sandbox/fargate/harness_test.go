package fargate_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecs"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/embedded/sqlite"
	"github.com/cairnrun/cairn/shared/sandbox/fargate"
	"github.com/cairnrun/cairn/shared/sandbox/placement"
)

var testKey = []byte("fargate-test-key-0123456789abcdef")

// harness is one deployment: the ECS environment, the loopback task world
// and one journal; providers made from it are processes of the deployment.
type harness struct {
	t     *testing.T
	env   *ecsEnv
	world *tasks
	store *sqlite.Store
	logs  syncBuffer // every provider's log

	mu        sync.Mutex
	publicIPs map[string]string // ENI id → the public IP assignPublicIP gave it
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newHarness(t *testing.T, sessions ...string) *harness {
	t.Helper()
	h := &harness{t: t, env: newECSEnv(t), world: newTasks(t)}
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "cairn.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h.store = st
	for _, id := range sessions {
		if _, err := st.CreateSession(context.Background(), contracts.Session{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// provider returns a new Provider with its own call counter.
func (h *harness) provider(mod ...func(*fargate.Config)) (*fargate.Provider, *countingECS) {
	h.t.Helper()
	c := &countingECS{inner: h.env.client, world: h.world, assignPublic: h.assignPublicIP}
	cfg := fargate.Config{
		ECS: c, Cluster: h.env.cluster, TaskDefinition: h.env.taskDefinition, Container: containerName,
		Subnets: []string{h.env.subnet}, SecurityGroups: []string{h.env.sg},
		Sessions: h.store, Tokens: placement.Tokens{Key: testKey},
		IdleTimeout: 5 * time.Minute, WaitRunning: 10 * time.Second, PollEvery: 20 * time.Millisecond,
		Endpoint: h.world.endpoint,
		Log:      slog.New(slog.NewTextHandler(&h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	for _, m := range mod {
		m(&cfg)
	}
	p, err := fargate.New(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	return p, c
}

func (h *harness) record(id string) *contracts.SandboxRecord {
	h.t.Helper()
	s, err := h.store.GetSession(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	if s.Sandbox == nil {
		h.t.Fatalf("session %s has no sandbox record", id)
	}
	return s.Sandbox
}

// ecsStatus is the task's lastStatus as ECS (moto) reports it, uncounted.
func (h *harness) ecsStatus(arn string) string {
	h.t.Helper()
	out, err := h.env.client.DescribeTasks(context.Background(), &ecs.DescribeTasksInput{Cluster: aws.String(h.env.cluster), Tasks: []string{arn}})
	if err != nil || len(out.Tasks) != 1 {
		h.t.Fatalf("describing %s: %v (%d tasks)", arn, err, len(out.Tasks))
	}
	return aws.ToString(out.Tasks[0].LastStatus)
}

func acquire(t *testing.T, p *fargate.Provider, id string, spec contracts.SandboxSpec) contracts.SandboxAPI {
	t.Helper()
	sb, err := p.Acquire(context.Background(), id, spec)
	if err != nil {
		t.Fatal(err)
	}
	return sb
}

func write(t *testing.T, sb contracts.SandboxAPI, path, content string) {
	t.Helper()
	if err := sb.WriteFile(context.Background(), contracts.WriteFileRequest{Path: path, Content: content}); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, sb contracts.SandboxAPI, path string) string {
	t.Helper()
	r, err := sb.ReadFile(context.Background(), contracts.ReadFileRequest{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	return r.Content
}
