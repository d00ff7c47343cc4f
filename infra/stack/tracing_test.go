package stack_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/cairnrun/cairn/infra/stack"
)

const (
	otlpEndpoint = "https://otel.example.com:4318"
	customLayer  = "arn:aws:lambda:eu-west-1:901920570463:layer:aws-otel-collector-arm64-ver-0-115-0:3"
	// defaultLayer is the template's Fn::Sub of the default layer.
	defaultLayer = "arn:aws:lambda:${AWS::Region}:901920570463:layer:aws-otel-collector-arm64-ver-0-117-0:1"
)

var tracingSynth struct {
	once              sync.Once
	adot, custom, otl *tmpl
	err               error
}

// tracingStacks synthesizes, once, the public stack (publicNet's props)
// with tracing=adot, with adot and a layer of its own (the LocalStack
// variant), and with tracing=otlp.
func tracingStacks(t *testing.T) (adot, custom, otlp *tmpl) {
	t.Helper()
	tracingSynth.once.Do(func() {
		defer func() {
			if r := recover(); r != nil {
				tracingSynth.err = fmt.Errorf("synthesis panicked: %v", r)
			}
		}()
		app := awscdk.NewApp(&awscdk.AppProps{
			Outdir:  jsii.String(filepath.Join(root, "cdk.out.tracing")),
			Context: &map[string]any{"aws:cdk:disable-stack-trace": true},
		})
		base := stack.Props{Assets: filepath.Join(root, "dist"), ImageContext: root, SandboxImage: publicImage}
		a, c, o := base, base, base
		a.Prefix, a.Tracing = "cairn-adot", stack.TracingADOT
		c.Prefix, c.Tracing, c.ADOTLayerARN, c.Sandboxes = "cairn-adot-custom", stack.TracingADOT, customLayer, stack.SandboxesLambda
		o.Prefix, o.Tracing, o.OTLPEndpoint = "cairn-otlp", stack.TracingOTLP, otlpEndpoint
		var ts []*tmpl
		for _, p := range []stack.Props{a, c, o} {
			s, err := stack.New(app, p.Prefix, p)
			if err != nil {
				tracingSynth.err = err
				return
			}
			ts = append(ts, &tmpl{name: p.Prefix, s: s})
		}
		for _, tp := range ts { // after every stack is built: this synthesizes the app
			tp.a = assertions.Template_FromStack(tp.s.Stack, nil)
			if tp.res, tracingSynth.err = parseResources(tp.a); tracingSynth.err != nil {
				return
			}
		}
		tracingSynth.adot, tracingSynth.custom, tracingSynth.otl = ts[0], ts[1], ts[2]
	})
	if tracingSynth.err != nil {
		t.Fatal(tracingSynth.err)
	}
	return tracingSynth.adot, tracingSynth.custom, tracingSynth.otl
}

// otelEnv is a function's OTEL_* variables, each as canonical JSON.
func otelEnv(tp *tmpl, fn string) map[string]string {
	out := map[string]string{}
	for k, v := range envOf(tp.props(tp.id(tp.s.Functions[fn]))) {
		if strings.HasPrefix(k, "OTEL_") {
			out[k] = js(v)
		}
	}
	return out
}

// tracingOf is a function's X-Ray mode, its layers (JSON) and its X-Ray
// statements.
func tracingOf(tp *tmpl, fn string) (mode, layers string, xray []stmt) {
	p := tp.props(tp.id(tp.s.Functions[fn]))
	mode = str(obj(p["TracingConfig"])["Mode"])
	if p["Layers"] != nil {
		layers = js(p["Layers"])
	}
	for _, s := range tp.statements(tp.id(tp.s.Roles[fn])) {
		for _, a := range s.Actions {
			if strings.HasPrefix(a, "xray:") {
				xray = append(xray, s)
				break
			}
		}
	}
	return mode, layers, xray
}

// Each tracing mode on every function. off (the four shared stacks): no
// OTEL_ variable, no layer, X-Ray tracing not active, no X-Ray grant.
// adot: the collector layer (by default the functions' architecture's, in
// the stack's region), OTLP to localhost:4318, a service name per
// function, OTLP metrics off, Tracing Active and one X-Ray statement —
// PutTraceSegments and PutTelemetryRecords on "*", nothing else. otlp: the
// operator's endpoint and a service name, nothing else. The isolate
// never changes: no environment, no layer, no tracing.
func TestTracingModes(t *testing.T) {
	adot, custom, otlp := tracingStacks(t)
	for _, tp := range append(all(t), adot, custom, otlp) {
		if tp.s.Props.Tracing == stack.TracingOff && (len(tp.s.Props.OTLPEndpoint) > 0 || len(tp.s.Props.ADOTLayerARN) > 0) {
			t.Errorf("%s: tracing off with %+v", tp.name, tp.s.Props)
		}
		for _, fn := range stack.Functions {
			mode, layers, xray := tracingOf(tp, fn)
			env := otelEnv(tp, fn)
			want := map[string]string{}
			wantMode, wantLayers, wantXRay := "", "", false
			if fn != stack.FnIsolate {
				service := js(tp.s.Props.Prefix + "-" + fn)
				switch tp.s.Props.Tracing {
				case stack.TracingADOT:
					want = map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": `"http://localhost:4318"`, "OTEL_SERVICE_NAME": service, "OTEL_METRICS_EXPORTER": `"none"`}
					wantMode, wantXRay = "Active", true
					wantLayers = js([]any{map[string]any{"Fn::Sub": defaultLayer}})
					if tp == custom {
						wantLayers = js([]string{customLayer})
					}
				case stack.TracingOTLP:
					want = map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": js(otlpEndpoint), "OTEL_SERVICE_NAME": service}
				}
			} else if e := envOf(tp.props(tp.id(tp.s.Functions[fn]))); len(e) != 0 {
				t.Errorf("%s isolate: environment %s", tp.name, js(e))
			}
			if js(env) != js(want) {
				t.Errorf("%s %s: OTEL_ variables %v, want %v", tp.name, fn, env, want)
			}
			if mode == "Active" != (wantMode == "Active") || layers != wantLayers {
				t.Errorf("%s %s: tracing %q layers %s, want %q %s", tp.name, fn, mode, layers, wantMode, wantLayers)
			}
			if !wantXRay {
				if len(xray) != 0 {
					t.Errorf("%s %s: X-Ray statements %+v", tp.name, fn, xray)
				}
				continue
			}
			if len(xray) != 1 || js(join(xray[0].Actions)) != js(xrayWrite) || js(xray[0].Resources) != `["*"]` || xray[0].Effect != "Allow" {
				t.Errorf("%s %s: X-Ray statements %+v, want one: %v on *", tp.name, fn, xray, xrayWrite)
			}
		}
	}
}

// Tracing adds no permission but X-Ray's, and only with adot: each role of
// the adot stack allows what the same stack without tracing allows, plus
// X-Ray's two writes for the runtime functions; the otlp stack's exactly
// the same. No other resource "*".
func TestTracingGrantsOnlyXRayWrites(t *testing.T) {
	adot, _, otlp := tracingStacks(t)
	off := publicNet(t) // the same props, tracing off
	for _, tp := range []*tmpl{adot, otlp} {
		checkWildcards(t, tp)
		for _, fn := range stack.Functions {
			want := off.actions(off.id(off.s.Roles[fn]))
			if tp == adot && fn != stack.FnIsolate {
				want = join(want, xrayWrite)
			}
			if got := tp.actions(tp.id(tp.s.Roles[fn])); js(got) != js(want) {
				t.Errorf("%s %s role actions\n got %v\nwant %v", tp.name, fn, got, want)
			}
		}
	}
}

// Bad tracing settings fail before anything is built, saying what is
// allowed.
func TestTracingRefusedWithAReason(t *testing.T) {
	ok := stack.Props{Assets: filepath.Join(root, "dist"), ImageContext: root}
	for _, c := range []struct {
		name string
		edit func(*stack.Props)
		want string
	}{
		{"unknown mode", func(p *stack.Props) { p.Tracing = "xray" }, `tracing "xray": want off, adot or otlp`},
		{"otlp without an endpoint", func(p *stack.Props) { p.Tracing = stack.TracingOTLP }, "tracing=otlp needs otlpEndpoint"},
		{"endpoint without a scheme", func(p *stack.Props) { p.Tracing, p.OTLPEndpoint = stack.TracingOTLP, "otel.example.com:4318" }, `otlpEndpoint "otel.example.com:4318": want an http:// or https:// URL`},
		{"endpoint of another scheme", func(p *stack.Props) { p.Tracing, p.OTLPEndpoint = stack.TracingOTLP, "grpc://otel:4317" }, "want an http:// or https:// URL"},
		{"endpoint without a host", func(p *stack.Props) { p.Tracing, p.OTLPEndpoint = stack.TracingOTLP, "https://" }, "want an http:// or https:// URL"},
		{"endpoint with credentials", func(p *stack.Props) { p.Tracing, p.OTLPEndpoint = stack.TracingOTLP, "https://u:p@otel:4318" }, "no credentials"},
		{"endpoint with a space", func(p *stack.Props) { p.Tracing, p.OTLPEndpoint = stack.TracingOTLP, "https://otel:4318 x" }, "want an http:// or https:// URL"},
		{"endpoint without otlp", func(p *stack.Props) { p.OTLPEndpoint = otlpEndpoint }, "otlpEndpoint is only used with tracing=otlp"},
		{"layer without adot", func(p *stack.Props) { p.Tracing, p.ADOTLayerARN = stack.TracingOTLP, customLayer }, "adotLayerArn is only used with tracing=adot"},
		{"layer that is no ARN", func(p *stack.Props) { p.Tracing, p.ADOTLayerARN = stack.TracingADOT, "aws-otel-collector" }, "want a Lambda layer version ARN"},
		{"layer without a version", func(p *stack.Props) {
			p.Tracing, p.ADOTLayerARN = stack.TracingADOT, strings.TrimSuffix(customLayer, ":3")
		}, "want a Lambda layer version ARN"},
		{"layer of the other architecture", func(p *stack.Props) {
			p.Tracing, p.ADOTLayerARN = stack.TracingADOT, strings.Replace(customLayer, "arm64", "amd64", 1)
		}, "an amd64 layer, the functions are arm64"},
		{"tracing from isolated subnets", func(p *stack.Props) { p.Tracing, p.Network = stack.TracingADOT, stack.NetworkPrivate }, "tracing=adot with network=private"},
		{"otlp from isolated subnets", func(p *stack.Props) {
			p.Tracing, p.OTLPEndpoint, p.Network = stack.TracingOTLP, otlpEndpoint, stack.NetworkPrivate
		}, "could reach neither X-Ray nor a collector"},
	} {
		p := ok
		c.edit(&p)
		if _, err := stack.New(nil, "bad", p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	// The same props are fine without the offending part.
	for _, p := range []stack.Props{
		{Tracing: stack.TracingOTLP, OTLPEndpoint: "http://10.0.0.5:4318/"},
		{Tracing: stack.TracingADOT, ADOTLayerARN: customLayer},
		{Tracing: stack.TracingADOT, Network: stack.NetworkPrivate, Sandboxes: stack.SandboxesLambda},
	} {
		p.Assets, p.ImageContext = ok.Assets, ok.ImageContext
		if err := propsError(p); err != nil {
			t.Errorf("%+v: %v", p, err)
		}
	}
}

// propsError is New's refusal of p, if any, without building a stack: New
// on a nil scope fails after the props are checked, so any other error
// (or a panic) means the props passed.
func propsError(p stack.Props) (err error) {
	defer func() { recover() }() //nolint:errcheck // a panic: the props passed and New went on to build
	_, err = stack.New(nil, "check", p)
	return err
}

// Context values: tracing, adotLayerArn, otlpEndpoint.
func TestTracingFromContext(t *testing.T) {
	ctx := map[string]string{"tracing": "otlp", "otlpEndpoint": otlpEndpoint, "adotLayerArn": customLayer}
	p, err := stack.FromContext(func(k string) string { return ctx[k] })
	if err != nil || p.Tracing != stack.TracingOTLP || p.OTLPEndpoint != otlpEndpoint || p.ADOTLayerARN != customLayer {
		t.Errorf("FromContext = %+v, %v", p, err)
	}
}

// sandboxd exports its spans to the operator's collector with otlp, and
// gets no OTEL_ variable otherwise (adot's collector is a Lambda layer).
func TestSandboxdTracing(t *testing.T) {
	adot, _, otlp := tracingStacks(t)
	if otlp.s.Sandbox == nil || adot.s.Sandbox == nil {
		t.Fatal("the tracing stacks have no sandbox task to check")
	}
	for _, tp := range append(fargate(t), adot, otlp) {
		if tp.s.Sandbox == nil {
			continue
		}
		var got map[string]string
		for _, id := range tp.ofType("AWS::ECS::TaskDefinition") {
			for _, c := range list(tp.props(id)["ContainerDefinitions"]) {
				got = map[string]string{}
				for _, kv := range list(obj(c)["Environment"]) {
					if name, _ := obj(kv)["Name"].(string); strings.HasPrefix(name, "OTEL_") {
						got[name] = js(obj(kv)["Value"])
					}
				}
			}
		}
		want := map[string]string{}
		if tp == otlp {
			want = map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": js(otlpEndpoint), "OTEL_SERVICE_NAME": js(tp.s.Props.Prefix + "-sandboxd")}
		}
		if js(got) != js(want) {
			t.Errorf("%s: sandboxd OTEL_ variables %v, want %v", tp.name, got, want)
		}
	}
}

// traceContent=true adds the GenAI content opt-in to every runtime
// function (and only with tracing on); anything but true/false is refused.
func TestTraceContentOptIn(t *testing.T) {
	get := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	p, err := stack.FromContext(get(map[string]string{"tracing": "otlp", "otlpEndpoint": otlpEndpoint, "traceContent": "true"}))
	if err != nil || !p.TraceContent {
		t.Fatalf("traceContent=true: %+v %v", p.TraceContent, err)
	}
	if _, err := stack.FromContext(get(map[string]string{"traceContent": "yes"})); err == nil || !strings.Contains(err.Error(), "traceContent") {
		t.Fatalf("traceContent=yes: %v", err)
	}
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(filepath.Join(root, "cdk.out.content")), Context: &map[string]any{"aws:cdk:disable-stack-trace": true}})
	base := stack.Props{Assets: filepath.Join(root, "dist"), ImageContext: root, SandboxImage: publicImage, Prefix: "cairn-content"}
	off := base
	off.TraceContent = true
	offApp := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(filepath.Join(root, "cdk.out.content-off")), Context: &map[string]any{"aws:cdk:disable-stack-trace": true}})
	if _, err := stack.New(offApp, "cairn-content-off", off); err == nil || !strings.Contains(err.Error(), "traceContent") {
		t.Fatalf("traceContent without tracing: %v", err)
	}
	on := base
	on.Tracing, on.OTLPEndpoint, on.TraceContent = stack.TracingOTLP, otlpEndpoint, true
	s, err := stack.New(app, "cairn-content", on)
	if err != nil {
		t.Fatal(err)
	}
	tp := &tmpl{name: "cairn-content", s: s, a: assertions.Template_FromStack(s.Stack, nil)}
	if tp.res, err = parseResources(tp.a); err != nil {
		t.Fatal(err)
	}
	for _, fn := range stack.Functions {
		if fn == stack.FnIsolate {
			continue
		}
		if got := otelEnv(tp, fn)["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"]; got != `"SPAN_ONLY"` {
			t.Errorf("%s: content opt-in %q", fn, got)
		}
	}
}
