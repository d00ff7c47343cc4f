package stack_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/infra/stack"
)

// Bad props fail before anything is built, naming what to fix.
func TestPropsRefusedWithAReason(t *testing.T) {
	ok := stack.Props{Assets: filepath.Join(root, "dist"), ImageContext: root}
	for _, c := range []struct {
		name string
		edit func(*stack.Props)
		want string
	}{
		{"unknown stage", func(p *stack.Props) { p.Stage = "staging" }, `stage "staging"`},
		{"half a JWT authorizer", func(p *stack.Props) { p.JWTIssuer = "https://issuer/" }, "jwtIssuer and jwtAudience"},
		{"key that is no ARN", func(p *stack.Props) { p.AnthropicKeyARN = "sk-ant-…" }, "want a Secrets Manager ARN"},
		{"unknown sandboxes", func(p *stack.Props) { p.Sandboxes = "docker" }, `sandboxes "docker"`},
		{"too many endpoint AZs", func(p *stack.Props) { p.EndpointAZs = 3 }, "endpointAzs 3"},
		{"functions not built", func(p *stack.Props) { p.Assets = t.TempDir() }, "run `make functions` first"},
		{"image context without the binary", func(p *stack.Props) { p.ImageContext = t.TempDir() }, "or set sandboxImage"},
		{"more reserved than the account leaves", func(p *stack.Props) { p.AccountConcurrency = 200 }, "reserved concurrency 222"},
		{"a phase below the event source minimum", func(p *stack.Props) { p.ModelConcurrency = 1 }, "modelConcurrency 1"},
		{"an api without concurrency", func(p *stack.Props) { p.APIConcurrency = -1 }, "apiConcurrency -1"},
		{"a prefix that is no stack name", func(p *stack.Props) { p.Prefix = "cairn_prod" }, `prefix "cairn_prod"`},
		{"an operator that is no IAM ARN", func(p *stack.Props) { p.Operators = []string{"alice"} }, `operator "alice": with IAM auth`},
		{"an operator of another service", func(p *stack.Props) { p.Operators = []string{"arn:aws:s3:::bucket"} }, "want an IAM user, role or assumed-role ARN"},
		{"an operator of another issuer", func(p *stack.Props) {
			p.JWTIssuer, p.JWTAudience, p.Operators = "https://issuer/", "aud", []string{"https://other/|root"}
		}, "want https://issuer/|<subject>"},
	} {
		p := ok
		c.edit(&p)
		// No scope: New refuses before it builds anything.
		if _, err := stack.New(nil, "bad", p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// Context values (`-c key=value`) become props; numbers are checked.
func TestFromContext(t *testing.T) {
	ctx := map[string]string{"stage": "prod", "alarmEmail": "a@b.c", "endpointAzs": "1", "throttleRate": "12.5", "sandboxes": "lambda",
		"apiConcurrency": "40", "modelConcurrency": "30", "toolsConcurrency": "25", "commitConcurrency": "5", "workflowConcurrency": "4",
		"accountConcurrency": "3000", "operators": "arn:aws:iam::111122223333:role/Ops,arn:aws:sts::111122223333:assumed-role/Dev/alice"}
	p, err := stack.FromContext(func(k string) string { return ctx[k] })
	if err != nil || p.Stage != stack.Prod || p.AlarmEmail != "a@b.c" || p.EndpointAZs != 1 || p.ThrottleRate != 12.5 || p.Sandboxes != stack.SandboxesLambda ||
		p.APIConcurrency != 40 || p.ModelConcurrency != 30 || p.ToolsConcurrency != 25 || p.CommitConcurrency != 5 || p.WorkflowConcurrency != 4 ||
		p.AccountConcurrency != 3000 || len(p.Operators) != 2 || p.Operators[1] != "arn:aws:sts::111122223333:assumed-role/Dev/alice" {
		t.Errorf("FromContext = %+v, %v", p, err)
	}
	ctx["isolateConcurrency"] = "ten"
	if _, err := stack.FromContext(func(k string) string { return ctx[k] }); err == nil || !strings.Contains(err.Error(), "isolateConcurrency") {
		t.Errorf("a non-number: error %v", err)
	}
}
