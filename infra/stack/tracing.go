package stack

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
)

// Trace export (Props.Tracing, context "tracing"). The runtime exports
// OpenTelemetry traces over OTLP/HTTP only when the standard
// OTEL_EXPORTER_OTLP_ENDPOINT asks (shared/telemetry); the stack only
// decides whether to set it and where it points. The isolate never
// traces: it boots no runtime and keeps its empty environment.
const (
	// TracingOff (the default): no OTEL_ variable, X-Ray tracing disabled,
	// nothing added — and nothing billed.
	TracingOff = "off"
	// TracingADOT: the AWS Distro for OpenTelemetry collector as a Lambda
	// layer (an extension listening on localhost:4318) in every runtime
	// function, its default configuration exporting traces to X-Ray;
	// Lambda's own X-Ray tracing active.
	TracingADOT = "adot"
	// TracingOTLP: every runtime function exports to a collector the
	// operator runs (Props.OTLPEndpoint); X-Ray tracing stays disabled.
	TracingOTLP = "otlp"
)

// The OTel SDK's standard variables the stack may set.
const (
	EnvOTLPEndpoint    = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvOTELService     = "OTEL_SERVICE_NAME"
	EnvMetricsExporter = "OTEL_METRICS_EXPORTER"
	EnvCaptureContent  = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
)

// ADOTEndpoint is where the ADOT collector extension receives OTLP/HTTP.
const ADOTEndpoint = "http://localhost:4318"

// ADOT collector layer: AWS publishes it from account 901920570463 in
// every commercial region as aws-otel-collector-<amd64|arm64>-ver-<v>
// (https://aws-otel.github.io/docs/getting-started/lambda/lambda-go).
const (
	adotAccount = "901920570463"
	adotVersion = "0-117-0:1"
)

// DefaultADOTLayerARN is the collector layer for the functions'
// architecture, in the stack's region (${AWS::Region}, substituted at
// deploy time: the stack stays environment-agnostic).
func DefaultADOTLayerARN() string {
	return "arn:aws:lambda:${AWS::Region}:" + adotAccount + ":layer:aws-otel-collector-" + adotArch() + "-ver-" + adotVersion
}

// functionArch is every function's architecture.
func functionArch() awslambda.Architecture { return awslambda.Architecture_ARM_64() }

// adotArch is the ADOT layers' name for functionArch (they say amd64 for
// Lambda's x86_64).
func adotArch() string {
	if a := *functionArch().Name(); a != "x86_64" {
		return a
	}
	return "amd64"
}

// layerARN: a Lambda layer version's ARN; the region may be ${AWS::Region}.
var layerARN = regexp.MustCompile(`^arn:aws[a-z-]*:lambda:([a-z0-9-]+|\$\{AWS::Region\}):[0-9]{12}:layer:([A-Za-z0-9_-]+):[0-9]+$`)

// checkTracing fills the tracing defaults and refuses what cannot work.
func (p *Props) checkTracing() error {
	if p.Tracing == "" {
		p.Tracing = TracingOff
	}
	switch p.Tracing {
	case TracingOff, TracingADOT, TracingOTLP:
	default:
		return fmt.Errorf("tracing %q: want %s, %s or %s", p.Tracing, TracingOff, TracingADOT, TracingOTLP)
	}
	if p.ADOTLayerARN != "" && p.Tracing != TracingADOT {
		return fmt.Errorf("adotLayerArn is only used with tracing=%s (tracing is %s)", TracingADOT, p.Tracing)
	}
	if p.OTLPEndpoint != "" && p.Tracing != TracingOTLP {
		return fmt.Errorf("otlpEndpoint is only used with tracing=%s (tracing is %s)", TracingOTLP, p.Tracing)
	}
	if p.TraceContent && p.Tracing == TracingOff {
		return fmt.Errorf("traceContent=true puts prompt and answer text on spans, and tracing is %s: set tracing=%s or %s too", TracingOff, TracingADOT, TracingOTLP)
	}
	if p.Tracing != TracingOff && p.Sandboxes == SandboxesFargate && p.Network == NetworkPrivate {
		// The tools function sits in isolated subnets: no route to X-Ray
		// (no endpoint for it) nor to an outside collector, so every
		// invocation would wait out the exporter's timeout.
		return fmt.Errorf("tracing=%s with network=%s: the tools function runs in isolated subnets and could reach neither X-Ray nor a collector; use network=%s or tracing=%s", p.Tracing, NetworkPrivate, NetworkPublic, TracingOff)
	}
	switch p.Tracing {
	case TracingADOT:
		if p.ADOTLayerARN == "" {
			p.ADOTLayerARN = DefaultADOTLayerARN()
		}
		m := layerARN.FindStringSubmatch(p.ADOTLayerARN)
		if m == nil {
			return fmt.Errorf("adotLayerArn %q: want a Lambda layer version ARN (arn:aws:lambda:<region>:<account>:layer:<name>:<version>; the region may be ${AWS::Region})", p.ADOTLayerARN)
		}
		if other := map[string]string{"arm64": "amd64", "amd64": "arm64"}[adotArch()]; strings.Contains(m[2], "-"+other+"-") {
			return fmt.Errorf("adotLayerArn %q: an %s layer, the functions are %s", p.ADOTLayerARN, other, adotArch())
		}
	case TracingOTLP:
		if p.OTLPEndpoint == "" {
			return fmt.Errorf("tracing=%s needs otlpEndpoint: the collector's OTLP/HTTP base URL (http:// or https://; the runtime appends /v1/traces)", TracingOTLP)
		}
		u, err := url.Parse(p.OTLPEndpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" ||
			strings.ContainsAny(p.OTLPEndpoint, " \t\n") {
			return fmt.Errorf("otlpEndpoint %q: want an http:// or https:// URL with a host and no credentials, query or fragment (the collector's OTLP/HTTP base URL)", p.OTLPEndpoint)
		}
	}
	return nil
}

// trace applies Props.Tracing to a runtime function's props (env is its
// environment, already in props).
//
// adot: the collector layer, OTLP to it, and Tracing ACTIVE — with which
// CDK itself grants the role xray:PutTraceSegments and
// xray:PutTelemetryRecords (both Lambda's segments and the collector's
// awsxray exporter need exactly these) on resource "*": X-Ray has no
// resource-level permissions, "*" is the only resource it accepts.
// OTLP metrics are off there (OTEL_METRICS_EXPORTER=none): the collector's
// default configuration only prints them to the log, and the functions
// already publish every metric as EMF.
func (s *Stack) trace(name string, env map[string]*string, props *awslambda.FunctionProps) {
	switch s.Props.Tracing {
	case TracingADOT:
		arn := jsii.String(s.Props.ADOTLayerARN)
		if strings.Contains(*arn, "${") {
			arn = awscdk.Fn_Sub(arn, nil)
		}
		props.Layers = &[]awslambda.ILayerVersion{awslambda.LayerVersion_FromLayerVersionArn(s.Stack, jsii.String(title(name)+"ADOTLayer"), arn)}
		props.Tracing = awslambda.Tracing_ACTIVE
		env[EnvOTLPEndpoint] = jsii.String(ADOTEndpoint)
		env[EnvMetricsExporter] = jsii.String("none")
	case TracingOTLP:
		env[EnvOTLPEndpoint] = jsii.String(s.Props.OTLPEndpoint)
	default:
		return
	}
	env[EnvOTELService] = jsii.String(serviceName(s.Props.Prefix, name))
	if s.Props.TraceContent {
		env[EnvCaptureContent] = jsii.String("SPAN_ONLY")
	}
}

// sandboxdTracing adds sandboxd's trace export to its task's environment:
// with otlp, the operator's endpoint (sandboxd continues each call's trace
// with a server span; the commands it runs never see OTEL_ variables, which
// it scrubs). With adot nothing: the collector is a Lambda layer, and a
// task would need a collector sidecar (not built).
func (s *Stack) sandboxdTracing(env map[string]*string) *map[string]*string {
	if s.Props.Tracing == TracingOTLP {
		env[EnvOTLPEndpoint] = jsii.String(s.Props.OTLPEndpoint)
		env[EnvOTELService] = jsii.String(serviceName(s.Props.Prefix, "sandboxd"))
	}
	return &env
}

// serviceName is a function's OTEL_SERVICE_NAME: "<prefix>-<function>".
func serviceName(prefix, name string) string { return prefix + "-" + name }
