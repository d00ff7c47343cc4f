package fargate_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/ecs/types"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/fargate"
	"github.com/cairnrun/cairn/shared/sandbox/placement"
)

func TestRunTaskArguments(t *testing.T) {
	h := newHarness(t, "ses_a")
	p, c := h.provider()
	spec := contracts.SandboxSpec{CPU: 1024, MemoryMiB: 2048}
	write(t, acquire(t, p, "ses_a", spec), "hello.txt", "hi")

	if runs, _, _ := c.counts(); runs != 1 {
		t.Fatalf("%d RunTask calls, want 1", runs)
	}
	in := c.lastRun()
	rec := h.record("ses_a")
	token := placement.Tokens{Key: testKey}.Mint("ses_a", rec.TokenRef)
	vpc := in.NetworkConfiguration.AwsvpcConfiguration
	if aws.ToString(in.Cluster) != h.env.cluster || aws.ToString(in.TaskDefinition) != h.env.taskDefinition ||
		in.LaunchType != types.LaunchTypeFargate || aws.ToInt32(in.Count) != 1 {
		t.Errorf("RunTask cluster/task definition/launch type/count: %s %s %s %d", aws.ToString(in.Cluster), aws.ToString(in.TaskDefinition), in.LaunchType, aws.ToInt32(in.Count))
	}
	if len(vpc.Subnets) != 1 || vpc.Subnets[0] != h.env.subnet || len(vpc.SecurityGroups) != 1 || vpc.SecurityGroups[0] != h.env.sg ||
		vpc.AssignPublicIp != types.AssignPublicIpDisabled {
		t.Errorf("awsvpc configuration %+v", vpc)
	}
	if in.Overrides == nil || len(in.Overrides.ContainerOverrides) != 1 || aws.ToString(in.Overrides.ContainerOverrides[0].Name) != containerName {
		t.Fatalf("overrides %+v", in.Overrides)
	}
	if got := envValue(in, placement.EnvTokenSHA256); got != placement.HashHex(token) {
		t.Errorf("%s override %q, want the token's hash", placement.EnvTokenSHA256, got)
	}
	if got := envValue(in, placement.EnvIdleTimeout); got != "5m0s" {
		t.Errorf("%s override %q", placement.EnvIdleTimeout, got)
	}
	for _, kv := range in.Overrides.ContainerOverrides[0].Environment {
		if strings.Contains(aws.ToString(kv.Value), token) {
			t.Errorf("override %s carries the token itself", aws.ToString(kv.Name))
		}
	}
	if aws.ToString(in.Overrides.Cpu) != "1024" || aws.ToString(in.Overrides.Memory) != "2048" {
		t.Errorf("task overrides cpu %q memory %q", aws.ToString(in.Overrides.Cpu), aws.ToString(in.Overrides.Memory))
	}
	if len(in.Tags) != 1 || aws.ToString(in.Tags[0].Key) != fargate.SessionTag || aws.ToString(in.Tags[0].Value) != "ses_a" {
		t.Errorf("tags %+v", in.Tags)
	}

	tk := h.world.get(rec.ID)
	if rec.Kind != fargate.Kind || tk == nil || rec.Endpoint != tk.endpoint || tk.port != fargate.DefaultPort ||
		rec.Fingerprint != placement.Fingerprint(contracts.SandboxSpec{Kind: fargate.Kind, CPU: 1024, MemoryMiB: 2048}) || rec.StartedAt.IsZero() {
		t.Fatalf("record %+v (task %+v)", rec, tk)
	}
	// ECS holds the session tag and the hash, never the token.
	out, err := h.env.client.DescribeTasks(context.Background(), &ecs.DescribeTasksInput{Cluster: aws.String(h.env.cluster),
		Tasks: []string{rec.ID}, Include: []types.TaskField{types.TaskFieldTags}})
	if err != nil || len(out.Tasks) != 1 {
		t.Fatalf("describe: %v", err)
	}
	if tags := out.Tasks[0].Tags; len(tags) != 1 || aws.ToString(tags[0].Value) != "ses_a" {
		t.Errorf("task tags in ECS: %+v", tags)
	}
	if logs := h.logs.String(); !strings.Contains(logs, rec.ID) || strings.Contains(logs, token) {
		t.Errorf("provider log should name the task and never the token:\n%s", logs)
	}

	// Without CPU/memory in the spec the task definition's sizes stand.
	p2, c2 := h.provider()
	if _, err := h.store.CreateSession(context.Background(), contracts.Session{ID: "ses_b"}); err != nil {
		t.Fatal(err)
	}
	acquire(t, p2, "ses_b", contracts.SandboxSpec{})
	if o := c2.lastRun().Overrides; o.Cpu != nil || o.Memory != nil {
		t.Errorf("zero spec sent cpu %v memory %v overrides", aws.ToString(o.Cpu), aws.ToString(o.Memory))
	}
}

// A later phase in another process (a new provider) reconnects through the
// session's record: one DescribeTasks, no RunTask.
func TestReconnectUsesRecord(t *testing.T) {
	h := newHarness(t, "ses_a")
	p1, _ := h.provider()
	write(t, acquire(t, p1, "ses_a", contracts.SandboxSpec{}), "notes.txt", "kept")
	rec := h.record("ses_a")

	p2, c2 := h.provider()
	sb := acquire(t, p2, "ses_a", contracts.SandboxSpec{Kind: fargate.Kind})
	if got := read(t, sb, "notes.txt"); got != "kept" {
		t.Fatalf("read %q", got)
	}
	if runs, describes, stops := c2.counts(); runs != 0 || describes != 1 || stops != 0 {
		t.Fatalf("reconnect made %d RunTask, %d DescribeTasks, %d StopTask calls; want 0, 1, 0", runs, describes, stops)
	}
	if !placement.Same(h.record("ses_a"), rec) {
		t.Fatalf("record changed on reconnect")
	}
}

func TestStoppedTaskIsReplaced(t *testing.T) {
	h := newHarness(t, "ses_a")
	p, c := h.provider()
	write(t, acquire(t, p, "ses_a", contracts.SandboxSpec{}), "notes.txt", "lost")
	old := h.record("ses_a")
	// The task goes away behind the provider's back (idle timeout, a crash).
	if _, err := h.env.client.StopTask(context.Background(), &ecs.StopTaskInput{Cluster: aws.String(h.env.cluster), Task: aws.String(old.ID)}); err != nil {
		t.Fatal(err)
	}
	h.world.stopped(old.ID)

	sb := acquire(t, p, "ses_a", contracts.SandboxSpec{})
	rec := h.record("ses_a")
	if runs, _, _ := c.counts(); runs != 2 || rec.ID == old.ID || rec.TokenRef == old.TokenRef {
		t.Fatalf("%d RunTask calls; record %+v (old %+v)", runs, rec, old)
	}
	if c.stopped(old.ID) {
		t.Errorf("StopTask sent for a task ECS reports STOPPED")
	}
	if _, err := sb.Stat(context.Background(), "notes.txt"); !errors.Is(err, contracts.ErrNotFound) {
		t.Errorf("a new task has a fresh workspace; stat: %v", err)
	}
	if h.ecsStatus(rec.ID) != "RUNNING" {
		t.Errorf("new task %s", h.ecsStatus(rec.ID))
	}
}

// A task ECS reports RUNNING whose sandboxd does not answer is replaced,
// and stopped.
func TestUnhealthyTaskIsReplaced(t *testing.T) {
	h := newHarness(t, "ses_a")
	p, c := h.provider()
	acquire(t, p, "ses_a", contracts.SandboxSpec{})
	old := h.record("ses_a")
	h.world.stopped(old.ID) // sandboxd died, the task lingers

	acquire(t, p, "ses_a", contracts.SandboxSpec{})
	if rec := h.record("ses_a"); rec.ID == old.ID || !c.stopped(old.ID) || h.ecsStatus(old.ID) != "STOPPED" {
		t.Fatalf("record %s (old %s), old stopped by provider: %v, in ECS: %s", rec.ID, old.ID, c.stopped(old.ID), h.ecsStatus(old.ID))
	}
}

func TestChangedFingerprintStartsNewAndStopsOld(t *testing.T) {
	h := newHarness(t, "ses_a")
	p, c := h.provider()
	acquire(t, p, "ses_a", contracts.SandboxSpec{})
	old := h.record("ses_a")

	acquire(t, p, "ses_a", contracts.SandboxSpec{CPU: 2048, MemoryMiB: 4096})
	rec := h.record("ses_a")
	if runs, _, _ := c.counts(); runs != 2 || rec.ID == old.ID || rec.Fingerprint == old.Fingerprint {
		t.Fatalf("%d RunTask calls; record %+v", runs, rec)
	}
	if !c.stopped(old.ID) || h.ecsStatus(old.ID) != "STOPPED" {
		t.Fatalf("old task not stopped: StopTask sent %v, ECS says %s", c.stopped(old.ID), h.ecsStatus(old.ID))
	}
	if aws.ToString(c.lastRun().Overrides.Cpu) != "2048" {
		t.Errorf("new task cpu override %q", aws.ToString(c.lastRun().Overrides.Cpu))
	}
}

func TestRelease(t *testing.T) {
	h := newHarness(t, "ses_a")
	p, c := h.provider()
	acquire(t, p, "ses_a", contracts.SandboxSpec{})
	rec := h.record("ses_a")
	if err := p.Release(context.Background(), "ses_a"); err != nil {
		t.Fatal(err)
	}
	if s, _ := h.store.GetSession(context.Background(), "ses_a"); s.Sandbox != nil {
		t.Fatalf("record kept: %+v", s.Sandbox)
	}
	if !c.stopped(rec.ID) || h.ecsStatus(rec.ID) != "STOPPED" {
		t.Fatalf("task not stopped")
	}
	if err := p.Release(context.Background(), "ses_a"); err != nil {
		t.Fatalf("second Release: %v", err)
	}
}

// sessionsHook runs before once, before the first UpdateSession.
type sessionsHook struct {
	placement.Sessions
	once   sync.Once
	before func()
}

func (h *sessionsHook) UpdateSession(ctx context.Context, s contracts.Session, expected int64) (contracts.Session, error) {
	h.once.Do(h.before)
	return h.Sessions.UpdateSession(ctx, s, expected)
}

// Two processes acquire one session at once and both run a task; the
// conditional write decides, the loser stops its task and reconnects.
func TestRaceLoserStopsItsTask(t *testing.T) {
	h := newHarness(t, "ses_a")
	winner, _ := h.provider()
	hook := &sessionsHook{Sessions: h.store}
	loser, lc := h.provider(func(c *fargate.Config) { c.Sessions = hook })
	hook.before = func() {
		write(t, acquire(t, winner, "ses_a", contracts.SandboxSpec{}), "w.txt", "winner")
	}
	sb := acquire(t, loser, "ses_a", contracts.SandboxSpec{})
	if got := read(t, sb, "w.txt"); got != "winner" {
		t.Fatalf("loser reads %q", got)
	}
	runs, _, stops := lc.counts()
	if runs != 1 || stops != 1 || lc.stops[0] == h.record("ses_a").ID {
		t.Fatalf("loser: %d RunTask, stops %v, record %s", runs, lc.stops, h.record("ses_a").ID)
	}
	if h.ecsStatus(lc.stops[0]) != "STOPPED" {
		t.Fatalf("loser's task %s", h.ecsStatus(lc.stops[0]))
	}
}

func TestTaskNeverRunningTimesOut(t *testing.T) {
	h := newHarness(t, "ses_a")
	p, c := h.provider(func(cfg *fargate.Config) { cfg.WaitRunning = 300 * time.Millisecond })
	c.pending = true
	_, err := p.Acquire(context.Background(), "ses_a", contracts.SandboxSpec{})
	if !errors.Is(err, contracts.ErrTimeout) || !errors.Is(err, contracts.ErrUnavailable) || !strings.Contains(err.Error(), "PROVISIONING") {
		t.Fatalf("err = %v, want ErrTimeout+ErrUnavailable naming the last status", err)
	}
	t.Log(err)
	c.pending = false
	if runs, _, stops := c.counts(); runs != 1 || stops != 1 {
		t.Fatalf("%d RunTask, %d StopTask: the task that never ran must be stopped", runs, stops)
	}
	if s, _ := h.store.GetSession(context.Background(), "ses_a"); s.Sandbox != nil {
		t.Fatalf("recorded %+v", s.Sandbox)
	}
}

func TestNeverHealthyTimesOut(t *testing.T) {
	h := newHarness(t, "ses_a")
	p, c := h.provider(func(cfg *fargate.Config) {
		cfg.WaitRunning = 500 * time.Millisecond
		cfg.Endpoint = func(string, int) string { return "http://127.0.0.1:1" } // nothing listens
	})
	_, err := p.Acquire(context.Background(), "ses_a", contracts.SandboxSpec{})
	if !errors.Is(err, contracts.ErrTimeout) || !strings.Contains(err.Error(), "not healthy") {
		t.Fatalf("err = %v", err)
	}
	t.Log(err)
	if runs, _, stops := c.counts(); runs != 1 || stops != 1 {
		t.Fatalf("%d RunTask, %d StopTask", runs, stops)
	}
}

func TestNewRefusesIncompleteConfig(t *testing.T) {
	full := fargate.Config{ECS: &countingECS{}, Cluster: "c", TaskDefinition: "td", Container: "x", Subnets: []string{"s"},
		Sessions: &sessionsHook{}, Tokens: placement.Tokens{Key: testKey}}
	for name, mod := range map[string]func(*fargate.Config){
		"no ECS":      func(c *fargate.Config) { c.ECS = nil },
		"no cluster":  func(c *fargate.Config) { c.Cluster = "" },
		"no subnets":  func(c *fargate.Config) { c.Subnets = nil },
		"no sessions": func(c *fargate.Config) { c.Sessions = nil },
		"short key":   func(c *fargate.Config) { c.Tokens.Key = []byte("k") },
	} {
		cfg := full
		mod(&cfg)
		if _, err := fargate.New(cfg); !errors.Is(err, contracts.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	p, err := fargate.New(full)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Acquire(context.Background(), "s", contracts.SandboxSpec{Kind: "process"}); !errors.Is(err, contracts.ErrInvalid) {
		t.Errorf("other kind: %v", err)
	}
}
