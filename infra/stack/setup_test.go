package stack_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/cairnrun/cairn/infra/stack"
)

// The tests synthesize one app once — four stacks: dev with the private
// sandbox network (network=private, the opt-in), prod with every option
// (network=private among them), the LocalStack variant and dev with the
// default network — public, nothing set but a public image and the prefix
// — and share the templates.
// Function assets and the image context are placeholders in a temp dir, so
// no cross-build or Docker is needed.

var root string // temp dir: dist/<fn>/bootstrap, functions/sandboxd/Dockerfile

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cairn-infra-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	root = dir
	files := []string{"functions/sandboxd/Dockerfile", "dist/sandboxd/bootstrap"}
	for _, fn := range stack.Functions {
		files = append(files, filepath.Join("dist", fn, "bootstrap"))
	}
	for _, f := range files {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
			err = os.WriteFile(p, []byte("placeholder "+f+"\n"), 0o755)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(root)
	os.Exit(code)
}

// Options of the prod stack.
const (
	jwtIssuer    = "https://issuer.example.com/"
	jwtAudience  = "cairn-api"
	alarmEmail   = "oncall@example.com"
	anthropicARN = "arn:aws:secretsmanager:us-east-1:111111111111:secret:cairn/anthropic-AbCdEf"
	openaiARN    = "arn:aws:secretsmanager:us-east-1:111111111111:secret:cairn/openai-GhIjKl"
	// prod pulls sandboxd from an ECR repository of its own account (the
	// private network reaches no other registry); public from a public one.
	prodImage   = "111111111111.dkr.ecr.us-east-1.amazonaws.com/cairn/sandboxd:v1"
	publicImage = "public.ecr.aws/cairn/sandboxd:v1"
)

// tmpl is one synthesized stack: the construct tree and its template.
type tmpl struct {
	name string
	s    *stack.Stack
	a    assertions.Template
	res  map[string]resource
}

type resource struct {
	Type       string         `json:"Type"`
	Properties map[string]any `json:"Properties"`
	Deletion   string         `json:"DeletionPolicy"`
	Update     string         `json:"UpdateReplacePolicy"`
}

var synth struct {
	once                     sync.Once
	dev, prod, local, public *tmpl
	err                      error
}

// stacks synthesizes once; a failure fails every test that needs it.
func stacks(t *testing.T) (dev, prod, local *tmpl) {
	t.Helper()
	synth.once.Do(func() {
		defer func() {
			if r := recover(); r != nil {
				synth.err = fmt.Errorf("synthesis panicked: %v", r)
			}
		}()
		app := awscdk.NewApp(&awscdk.AppProps{
			Outdir:  jsii.String(filepath.Join(root, "cdk.out")),
			Context: &map[string]any{"aws:cdk:disable-stack-trace": true},
		})
		base := stack.Props{Assets: filepath.Join(root, "dist"), ImageContext: root}
		devProps := base
		devProps.Network = stack.NetworkPrivate
		prodProps := devProps
		prodProps.Stage, prodProps.JWTIssuer, prodProps.JWTAudience, prodProps.AlarmEmail = stack.Prod, jwtIssuer, jwtAudience, alarmEmail
		prodProps.AnthropicKeyARN, prodProps.OpenAIKeyARN = anthropicARN, openaiARN
		prodProps.Operators = []string{jwtIssuer + "|oncall", " " + jwtIssuer + "|sre "}
		prodProps.SandboxImage = prodImage
		publicProps := base
		publicProps.Prefix, publicProps.SandboxImage = "cairn-public", publicImage // the network left to its default
		localProps := base
		localProps.Sandboxes, localProps.Prefix = stack.SandboxesLambda, "cairn-local"
		var ts []*tmpl
		for _, c := range []struct {
			name string
			p    stack.Props
		}{{"dev", devProps}, {"prod", prodProps}, {"local", localProps}, {"public", publicProps}} {
			s, err := stack.New(app, "cairn-"+c.name, c.p)
			if err != nil {
				synth.err = err
				return
			}
			ts = append(ts, &tmpl{name: c.name, s: s})
		}
		for _, tp := range ts {
			tp.a = assertions.Template_FromStack(tp.s.Stack, nil)
			if tp.res, synth.err = parseResources(tp.a); synth.err != nil {
				return
			}
		}
		synth.dev, synth.prod, synth.local, synth.public = ts[0], ts[1], ts[2], ts[3]
	})
	if synth.err != nil {
		t.Fatal(synth.err)
	}
	return synth.dev, synth.prod, synth.local
}

// parseResources reads a template's resources.
func parseResources(a assertions.Template) (map[string]resource, error) {
	raw, err := json.Marshal(a.ToJSON())
	if err != nil {
		return nil, err
	}
	var doc struct {
		Resources map[string]resource `json:"Resources"`
	}
	err = json.Unmarshal(raw, &doc)
	return doc.Resources, err
}

func resources(t *testing.T, a assertions.Template) map[string]resource {
	t.Helper()
	res, err := parseResources(a)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// publicNet is the stack with the public sandbox network.
func publicNet(t *testing.T) *tmpl {
	stacks(t)
	return synth.public
}

// all returns the four stacks, for promises that hold in every variant.
func all(t *testing.T) []*tmpl {
	dev, prod, local := stacks(t)
	return []*tmpl{dev, prod, local, publicNet(t)}
}

// must runs a CDK assertion, turning its panic into a test error.
func must(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: %v", what, r)
		}
	}()
	f()
}

// id is the logical id of a construct's CloudFormation resource.
func (tp *tmpl) id(c constructs.IConstruct) string {
	if el, ok := c.(awscdk.CfnElement); ok {
		return *tp.s.GetLogicalId(el)
	}
	return *tp.s.GetLogicalId(c.Node().DefaultChild().(awscdk.CfnElement))
}

// ofType returns the logical ids of every resource of a type, sorted.
func (tp *tmpl) ofType(typ string) []string {
	var ids []string
	for id, r := range tp.res {
		if r.Type == typ {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

func (tp *tmpl) props(id string) map[string]any { return tp.res[id].Properties }

// js is the canonical JSON of a template value, for comparisons.
func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}

func ref(id string) string           { return js(map[string]any{"Ref": id}) }
func getAtt(id, attr string) string  { return js(map[string]any{"Fn::GetAtt": []string{id, attr}}) }
func refersTo(v any, id string) bool { return strings.Contains(js(v), `"`+id+`"`) }
func list(v any) []any               { return asList(v) }
func str(v any) string               { s, _ := v.(string); return s }
func obj(v any) map[string]any       { m, _ := v.(map[string]any); return m }
func num(v any) float64              { f, _ := v.(float64); return f }
func envOf(p map[string]any) map[string]any {
	return obj(obj(p["Environment"])["Variables"])
}

func asList(v any) []any {
	switch x := v.(type) {
	case nil:
		return nil
	case []any:
		return x
	default:
		return []any{x}
	}
}

// Stack ids of two creations of one stack (CloudFormation's
// arn:…:stack/<name>/<uuid>): names made from the deployment id differ
// between them, fixed names do not.
const (
	stackIDFirst  = "arn:aws:cloudformation:us-east-1:111111111111:stack/cairn-prod/51af3dc0-da77-11e4-872e-1234567db123"
	stackIDSecond = "arn:aws:cloudformation:us-east-1:111111111111:stack/cairn-prod/9e2b07a0-6f1c-11ef-a1b2-0a1b2c3d4e5f"
)

// deployRegion is the region deployed evaluates names in: as long a
// region name as AWS has.
const deployRegion = "ap-southeast-5"

// deployed evaluates a template value — a string, or the intrinsics the
// stack uses in names (Fn::Join, Fn::Select, Fn::Split, Ref AWS::StackId,
// Ref AWS::Region) —
// as CloudFormation would for a stack with this id. ok is false for
// anything else.
func deployed(v any, stackID string) (out string, ok bool) {
	parts, ok := deployedList(v, stackID)
	if !ok || len(parts) != 1 {
		return "", false
	}
	return parts[0], true
}

func deployedList(v any, stackID string) ([]string, bool) {
	switch x := v.(type) {
	case string:
		return []string{x}, true
	case []any:
		var out []string
		for _, e := range x {
			s, ok := deployed(e, stackID)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	case map[string]any:
		if len(x) != 1 {
			return nil, false
		}
		for fn, arg := range x {
			args := list(arg)
			switch fn {
			case "Ref":
				if arg == "AWS::StackId" {
					return []string{stackID}, true
				}
				if arg == "AWS::Region" {
					return []string{deployRegion}, true
				}
			case "Fn::Join":
				if len(args) == 2 {
					parts, ok := deployedList(args[1], stackID)
					return []string{strings.Join(parts, str(args[0]))}, ok
				}
			case "Fn::Split":
				if len(args) == 2 {
					s, ok := deployed(args[1], stackID)
					return strings.Split(s, str(args[0])), ok
				}
			case "Fn::Select":
				if len(args) == 2 {
					parts, ok := deployedList(args[1], stackID)
					if i := int(num(args[0])); ok && i < len(parts) {
						return []string{parts[i]}, true
					}
				}
			}
		}
	}
	return nil, false
}
