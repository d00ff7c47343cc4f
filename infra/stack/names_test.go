package stack_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/infra/stack"
)

// repo is the repository root, seen from infra/stack.
const repo = "../.."

// consts returns the string (and int) constants declared in a Go file.
func consts(t *testing.T, file string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(repo, file), nil, 0)
	if err != nil {
		t.Fatalf("reading the runtime's names: %v", err)
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
					v := lit.Value
					if lit.Kind == token.STRING {
						v, _ = strconv.Unquote(v)
					}
					out[name.Name] = v
				}
			}
		}
	}
	return out
}

// runtimeLiterals returns every "CAIRN_…" string literal in the non-test
// code functions link: the variables they may read.
func runtimeLiterals(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, dir := range []string{"shared", "functions"} { // what a function links; not cmd/ (the CLI)
		err := filepath.WalkDir(filepath.Join(repo, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), p, nil, 0)
			if err != nil {
				return nil // a file mid-edit elsewhere is not this test's concern
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if v, err := strconv.Unquote(lit.Value); err == nil && strings.HasPrefix(v, "CAIRN_") {
						out[v] = true
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// The names the stack hands the runtime are the runtime's own: table
// layout, queue names, environment variables, the sandbox container.
func TestNamesMatchTheRuntime(t *testing.T) {
	if _, err := os.Stat(filepath.Join(repo, "shared")); err != nil {
		t.Skipf("runtime source not beside infra/: %v", err)
	}
	check := func(file string, want map[string]string) {
		got := consts(t, file)
		for name, v := range want {
			if got[name] != v {
				t.Errorf("%s: %s = %q, infra has %q", file, name, got[name], v)
			}
		}
	}
	check("shared/aws/backend/awsbackend.go", map[string]string{
		"EnvTable": stack.EnvTable, "EnvBucket": stack.EnvBucket, "EnvQueuePrefix": stack.EnvQueuePrefix,
		"EnvLeaseTTL": stack.EnvLeaseTTL, "EnvDefaultModel": stack.EnvDefaultModel, "EnvSandboxDir": stack.EnvSandboxDir,
		"EnvOperators": stack.EnvOperators,
		"DefaultModel": stack.DefaultModel,
	})
	check("shared/aws/backend/sandboxes.go", map[string]string{
		"EnvSandboxCluster": stack.EnvSandboxCluster, "EnvSandboxTaskDefinition": stack.EnvSandboxTaskDefinition,
		"EnvSandboxContainer": stack.EnvSandboxContainer, "EnvSandboxSubnets": stack.EnvSandboxSubnets,
		"EnvSandboxSecurityGroups": stack.EnvSandboxSecurityGroups, "EnvSandboxKeySecret": stack.EnvSandboxKeySecret,
		"EnvSandboxIdle": stack.EnvSandboxIdle,
	})
	check("shared/model/providers/keys/keys.go", map[string]string{
		"EnvAnthropicKeyRef": stack.EnvAnthropicKey, "EnvOpenAIKeyRef": stack.EnvOpenAIKey,
	})
	check("shared/aws/dynamo/table.go", map[string]string{"GSI": stack.IndexGSI, "LSI": stack.IndexLSI, "TTLAttribute": stack.TTLAttribute})
	check("shared/aws/dynamo/store.go", map[string]string{
		"attrPK": stack.AttrPK, "attrSK": stack.AttrSK, "attrGSIPK": stack.AttrGSIPK, "attrGSISK": stack.AttrGSISK, "attrLSK": stack.AttrLSK,
	})
	check("shared/contracts/queue.go", map[string]string{"QueueModel": stack.QueueModel, "QueueTools": stack.QueueTools, "QueueCommit": stack.QueueCommit})
	check("shared/contracts/workflow.go", map[string]string{"QueueWorkflow": stack.QueueWorkflow})
	check("shared/sandbox/fargate/provider.go", map[string]string{"DefaultPort": strconv.Itoa(stack.SandboxPort)})

	docker, err := os.ReadFile(filepath.Join(repo, "functions/sandboxd/Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^EXPOSE ` + strconv.Itoa(stack.SandboxPort) + `$`).Match(docker) {
		t.Errorf("functions/sandboxd/Dockerfile does not EXPOSE %d", stack.SandboxPort)
	}

	check("shared/aws/backend/workflows.go", map[string]string{
		"EnvIsolateFunction": stack.EnvIsolateFunction, "EnvSchedulerGroup": stack.EnvSchedulerGroup,
		"EnvSchedulerRole": stack.EnvSchedulerRoleARN, "EnvWorkflowQueue": stack.EnvWorkflowQueueARN,
	})
}

// Every CAIRN_ variable the runtime reads on AWS is set by the stack, or
// left unset on purpose.
func TestStackSetsWhatTheRuntimeReads(t *testing.T) {
	if _, err := os.Stat(filepath.Join(repo, "shared")); err != nil {
		t.Skipf("runtime source not beside infra/: %v", err)
	}
	unset := map[string]string{
		"CAIRN_AWS_ENDPOINT":   "tests: the LocalStack/moto endpoint",
		"CAIRN_SANDBOX_RUN_AS": "cairn dev only (the local kind run as root); on AWS sandboxd takes SANDBOXD_RUN_AS from its image and task definition",
		"CAIRN_PRICES":         "optional: a price table file over the repository's (shared/pricing); the stack's functions use the repository's table",
	}
	set := map[string]bool{}
	for _, tp := range all(t) {
		for _, id := range tp.ofType("AWS::Lambda::Function") {
			for k := range envOf(tp.props(id)) {
				set[k] = true
			}
		}
	}
	for name := range runtimeLiterals(t) {
		if strings.HasSuffix(name, "_") || set[name] || unset[name] != "" {
			continue
		}
		t.Errorf("the runtime reads %s, which no function of the stack sets: set it in infra/stack or list why not", name)
	}
}

// The lease the stack sets is the runtime's own default (shared/turn:
// DefaultLeaseTTL = 30 * time.Second, renewed every TTL/3), so the
// deployed functions and `cairn dev` lease alike.
func TestLeaseMatchesTheRuntime(t *testing.T) {
	if _, err := os.Stat(filepath.Join(repo, "shared")); err != nil {
		t.Skipf("runtime source not beside infra/: %v", err)
	}
	const file = "shared/turn/engine.go"
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(repo, file), nil, 0)
	if err != nil {
		t.Fatalf("reading the runtime's lease: %v", err)
	}
	seconds := -1
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range vs.Names {
			if name.Name != "DefaultLeaseTTL" || i >= len(vs.Values) {
				continue
			}
			// N * time.Second
			if b, ok := vs.Values[i].(*ast.BinaryExpr); ok && b.Op == token.MUL {
				lit, _ := b.X.(*ast.BasicLit)
				sel, _ := b.Y.(*ast.SelectorExpr)
				if lit != nil && sel != nil && sel.Sel.Name == "Second" {
					seconds, _ = strconv.Atoi(lit.Value)
				}
			}
		}
		return true
	})
	if seconds != stack.LeaseTTLSeconds {
		t.Errorf("%s: DefaultLeaseTTL is %d s (-1: not of the form N * time.Second), infra sets %s=%d", file, seconds, stack.EnvLeaseTTL, stack.LeaseTTLSeconds)
	}
}
