package placement_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/local"
	"github.com/cairnrun/cairn/shared/sandbox/placement"
)

// kindProvider records what it was asked.
type kindProvider struct {
	name     string
	specs    []contracts.SandboxSpec
	released []string
	err      error
}

func (p *kindProvider) Acquire(ctx context.Context, id string, spec contracts.SandboxSpec) (contracts.SandboxAPI, error) {
	p.specs = append(p.specs, spec)
	return nil, nil
}

func (p *kindProvider) Release(ctx context.Context, id string) error {
	p.released = append(p.released, id)
	return p.err
}

func TestRouter(t *testing.T) {
	ctx := context.Background()
	local, proc := &kindProvider{name: "local"}, &kindProvider{name: "process", err: errors.New("boom")}
	r := &placement.Router{Default: "local", Kinds: map[string]contracts.SandboxProvider{"local": local, "process": proc}}

	tests := []struct {
		kind string
		want *kindProvider
	}{{"", local}, {"local", local}, {"process", proc}}
	for _, tt := range tests {
		before := len(tt.want.specs)
		if _, err := r.Acquire(ctx, "s", contracts.SandboxSpec{Kind: tt.kind, CPU: 7}); err != nil {
			t.Fatalf("kind %q: %v", tt.kind, err)
		}
		if len(tt.want.specs) != before+1 {
			t.Fatalf("kind %q did not reach %s", tt.kind, tt.want.name)
		}
		if got := tt.want.specs[len(tt.want.specs)-1]; got.Kind != tt.want.name || got.CPU != 7 {
			t.Errorf("kind %q: provider got spec %+v, want Kind filled in", tt.kind, got)
		}
	}

	_, err := r.Acquire(ctx, "s", contracts.SandboxSpec{Kind: "fargate"})
	if !errors.Is(err, contracts.ErrInvalid) {
		t.Fatalf("unknown kind: %v, want ErrInvalid", err)
	}
	for _, want := range []string{`"fargate"`, `"local" (default)`, `"process"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %s", err, want)
		}
	}

	err = r.Release(ctx, "s")
	if len(local.released) != 1 || len(proc.released) != 1 {
		t.Fatalf("release reached local %v, process %v; want both", local.released, proc.released)
	}
	if err == nil || !strings.Contains(err.Error(), "process") {
		t.Errorf("release error %v should name the failing kind", err)
	}
}

// Check asks the kind's own provider about the options it serves: a local
// directory has no network of its own and keeps its workspace.
func TestRouterCheckAsksTheKindsProvider(t *testing.T) {
	r := &placement.Router{Default: "local", Kinds: map[string]contracts.SandboxProvider{
		"local": local.NewProvider(t.TempDir(), local.Options{})}}
	if err := r.Check(contracts.SandboxSpec{Network: "none"}); err != nil {
		t.Fatal(err)
	}
	for opt, spec := range map[string]contracts.SandboxSpec{
		"sandbox.network":   {Network: "internet"},
		"sandbox.workspace": {Kind: "local", Workspace: "ephemeral"},
	} {
		if err := r.Check(spec); !errors.Is(err, contracts.ErrInvalid) || !strings.Contains(err.Error(), opt) {
			t.Errorf("%+v: %v, want ErrInvalid naming %s", spec, err, opt)
		}
	}
}
