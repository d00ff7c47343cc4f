package stack

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
)

// Stage chooses removal policies, deletion protection, log retention and
// how many AZs carry the interface VPC endpoints.
type Stage string

const (
	Dev  Stage = "dev"
	Prod Stage = "prod"
)

// Where session sandboxes run.
const (
	// SandboxesFargate: sandboxd in a Fargate task per session, in a VPC
	// without NAT (the production shape).
	SandboxesFargate = "fargate"
	// SandboxesLambda: no VPC, no ECS; tools run in directories inside the
	// tools function, next to its credentials. Only for LocalStack
	// (`make deploy-local`), whose free edition has no ECS.
	SandboxesLambda = "lambda"
)

// How the Fargate sandboxes are networked (Props.Network; docs/DEPLOY.md
// "Sandbox network" weighs the two).
const (
	// NetworkPrivate: isolated subnets, no route out; the tools function
	// in the VPC reaches sandboxd on its private IP, and VPC endpoints —
	// each with an account-scoped endpoint policy — serve the tools
	// function and the image pull. Costs the interface endpoints' hours
	// idle. Opt-in (network=private).
	NetworkPrivate = "private"
	// NetworkPublic (the default): public subnets, an internet gateway, no
	// NAT, no endpoints; tasks get a public IP, the tools function stays
	// outside the VPC and speaks TLS to sandboxd, pinned to the task's own
	// certificate (shared/sandbox/fargate). Costs nothing by the hour idle.
	NetworkPublic = "public"
)

// Props configure the stack. Zero values take the stage's defaults.
type Props struct {
	awscdk.StackProps
	Stage Stage // dev (default) or prod
	// Prefix starts every name the stack sets (naming.go): the queues
	// ("<prefix>-<deployment id>-model.fifo"), the log groups, the schedule
	// group, the API, the task family; main.go names the stack after it.
	// Default "cairn-<stage>"; checked against every name's limit
	// (checkPrefix).
	Prefix string

	// Assets is the directory holding <fn>/bootstrap for every function
	// (`make functions` writes ../dist). Tests point it at placeholders.
	Assets string
	// ImageContext is the build context of the sandboxd image (the repo
	// root: the Dockerfile is functions/sandboxd/Dockerfile and copies
	// dist/sandboxd/bootstrap). Synthesis only stages it; the CLI builds it.
	ImageContext string
	// SandboxImage, when set, is used instead of building the image (e.g.
	// for a machine without Docker): an ECR image of this account and
	// region (<account>.dkr.ecr.<region>.amazonaws.com/<repo>[:tag|@sha256:…],
	// the task's execution role may pull it), or — with NetworkPublic
	// only — any public image (a private network reaches no registry
	// but its own account's ECR, through the endpoints).
	SandboxImage string
	Sandboxes    string // SandboxesFargate (default) or SandboxesLambda
	Network      string // NetworkPublic (default) or NetworkPrivate; Fargate only

	JWTIssuer, JWTAudience string // both set: a JWT authorizer instead of IAM
	// Operators may read and cancel everyone's sessions and runs (the api
	// function's CAIRN_OPERATORS; context "operators", comma-separated).
	// With IAM auth, IAM ARNs: an assumed-role session, a user, or a role
	// (arn:aws:iam::ACCOUNT:role/NAME: every session of it); with a JWT
	// authorizer, "<jwtIssuer>|<subject>". Default none.
	Operators  []string
	AlarmEmail string // set: an SNS topic with this subscription is every alarm's action
	// Model API keys: full Secrets Manager ARNs (with the random suffix);
	// only the functions that resolve keys may read them.
	AnthropicKeyARN, OpenAIKeyARN string
	DefaultModel                  string // default DefaultModel

	EndpointAZs   int     // AZs with interface endpoints; default dev 1, prod 2
	ThrottleRate  float64 // API requests per second (steady); default 50
	ThrottleBurst int     // API burst; default 100

	// Reserved concurrency (concurrency.go). APIConcurrency caps the api
	// function (long-polls hold an invocation each) and so can never take
	// what the phases reserve; a phase's value is both its reserved
	// concurrency and its event source's maximum concurrency (2..1000).
	// AccountConcurrency is the account's Lambda concurrency limit, which
	// synthesis cannot look up: everything reserved must leave the 100
	// unreserved executions Lambda insists on.
	APIConcurrency      int // default 100
	ModelConcurrency    int // default 20
	ToolsConcurrency    int // default 20
	CommitConcurrency   int // default 10
	WorkflowConcurrency int // default 10
	IsolateConcurrency  int // default 10
	StreamConcurrency   int // default 50: open event streams (each holds an invocation)
	AccountConcurrency  int // default 1000 (the Lambda default quota)

	// Trace export (tracing.go): TracingOff (default), TracingADOT or
	// TracingOTLP. ADOTLayerARN: the collector layer with TracingADOT
	// (default DefaultADOTLayerARN; ${AWS::Region} is substituted).
	// OTLPEndpoint: the operator's collector with TracingOTLP (required).
	Tracing, ADOTLayerARN, OTLPEndpoint string
	// TraceContent opts in to prompt, answer and tool text on spans
	// (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY);
	// only with tracing on. Default false: no text is ever an attribute.
	TraceContent bool
}

// withDefaults fills the zero values and checks the rest.
func (p Props) withDefaults() (Props, error) {
	if p.Stage == "" {
		p.Stage = Dev
	}
	if p.Stage != Dev && p.Stage != Prod {
		return p, fmt.Errorf("stage %q: want dev or prod", p.Stage)
	}
	if p.Prefix == "" {
		p.Prefix = "cairn-" + string(p.Stage)
	}
	if p.Sandboxes == "" {
		p.Sandboxes = SandboxesFargate
	}
	if p.Sandboxes != SandboxesFargate && p.Sandboxes != SandboxesLambda {
		return p, fmt.Errorf("sandboxes %q: want %s or %s", p.Sandboxes, SandboxesFargate, SandboxesLambda)
	}
	if p.Network == "" {
		p.Network = NetworkPublic // nothing billed by the hour idle (docs/DEPLOY.md "Sandbox network")
	}
	if p.Network != NetworkPrivate && p.Network != NetworkPublic {
		return p, fmt.Errorf("network %q: want %s or %s", p.Network, NetworkPrivate, NetworkPublic)
	}
	if err := p.checkSandboxImage(); err != nil {
		return p, err
	}
	if (p.JWTIssuer == "") != (p.JWTAudience == "") {
		return p, fmt.Errorf("a JWT authorizer needs both jwtIssuer and jwtAudience")
	}
	if err := p.checkOperators(); err != nil {
		return p, err
	}
	if err := p.checkTracing(); err != nil {
		return p, err
	}
	for _, arn := range []string{p.AnthropicKeyARN, p.OpenAIKeyARN} {
		if arn != "" && !strings.HasPrefix(arn, "arn:aws:secretsmanager:") {
			return p, fmt.Errorf("model key %q: want a Secrets Manager ARN", arn)
		}
	}
	if p.DefaultModel == "" {
		p.DefaultModel = DefaultModel
	}
	if p.EndpointAZs == 0 {
		p.EndpointAZs = map[Stage]int{Dev: 1, Prod: 2}[p.Stage]
	}
	if p.EndpointAZs < 1 || p.EndpointAZs > maxAZs {
		return p, fmt.Errorf("endpointAzs %d: want 1..%d", p.EndpointAZs, maxAZs)
	}
	if p.ThrottleRate == 0 {
		p.ThrottleRate = 50
	}
	if p.ThrottleBurst == 0 {
		p.ThrottleBurst = 100
	}
	if err := p.concurrencyDefaults(); err != nil {
		return p, err
	}
	if err := checkPrefix(p); err != nil {
		return p, err
	}
	if p.Assets == "" {
		p.Assets = filepath.Join("..", "dist")
	}
	if p.ImageContext == "" {
		p.ImageContext = ".."
	}
	for _, fn := range Functions {
		if _, err := os.Stat(filepath.Join(p.Assets, fn, "bootstrap")); err != nil {
			return p, fmt.Errorf("function %s: %w (run `make functions` first)", fn, err)
		}
	}
	if p.Sandboxes == SandboxesFargate && p.SandboxImage == "" {
		for _, f := range []string{sandboxDockerfile, sandboxBinary} {
			if _, err := os.Stat(filepath.Join(p.ImageContext, f)); err != nil {
				return p, fmt.Errorf("sandbox image: %w (run `make functions` first, or set sandboxImage)", err)
			}
		}
	}
	return p, nil
}

// ecrImage is an ECR private image reference: account, region, repository,
// then a tag or digest (or neither: latest).
var ecrImage = regexp.MustCompile(`^([0-9]{12})\.dkr\.ecr\.([a-z0-9-]+)\.amazonaws\.com/([a-z0-9][a-z0-9._/-]*)(?::([A-Za-z0-9_][A-Za-z0-9_.-]{0,127})|@(sha256:[0-9a-f]{64}))?$`)

// checkSandboxImage: a private network pulls only from ECR (through its
// endpoints, whose policy admits this account's repositories only), so
// any other image could never start there.
func (p *Props) checkSandboxImage() error {
	if p.SandboxImage == "" || p.Sandboxes == SandboxesLambda || ecrImage.MatchString(p.SandboxImage) {
		return nil
	}
	if p.Network == NetworkPrivate {
		return fmt.Errorf("sandboxImage %q: with network=%s only an ECR image of this account and region can be pulled (<account>.dkr.ecr.<region>.amazonaws.com/<repo>[:tag]); push it there, or use network=%s", p.SandboxImage, NetworkPrivate, NetworkPublic)
	}
	if strings.ContainsAny(p.SandboxImage, " \t") {
		return fmt.Errorf("sandboxImage %q: not an image reference", p.SandboxImage)
	}
	return nil
}

// iamPrincipal is the ARN of an IAM or STS principal (the runtime,
// shared/aws/lambdafn, reads it exactly).
var iamPrincipal = regexp.MustCompile(`^arn:aws[a-z-]*:(iam|sts)::[0-9]{12}:(user|role|assumed-role)/[^,]+$`)

// checkOperators trims the operators and checks each names a principal the
// stack's authorizer can produce: an IAM ARN behind IAM auth,
// "<jwtIssuer>|<subject>" behind the JWT authorizer.
func (p *Props) checkOperators() error {
	var ops []string
	for _, o := range p.Operators {
		if o = strings.TrimSpace(o); o == "" {
			continue
		}
		switch {
		case p.JWTIssuer == "" && !iamPrincipal.MatchString(o):
			return fmt.Errorf("operator %q: with IAM auth, want an IAM user, role or assumed-role ARN", o)
		case p.JWTIssuer != "" && (!strings.HasPrefix(o, p.JWTIssuer+"|") || o == p.JWTIssuer+"|"):
			return fmt.Errorf("operator %q: with the JWT authorizer, want %s|<subject>", o, p.JWTIssuer)
		}
		ops = append(ops, o)
	}
	p.Operators = ops
	return nil
}

// FromContext reads Props from CDK context values (`cdk -c key=value`, or
// `go run . key=value`); get returns "" for an absent key.
func FromContext(get func(key string) string) (Props, error) {
	p := Props{
		Stage: Stage(get("stage")), Prefix: get("prefix"), Assets: get("assets"), ImageContext: get("imageContext"),
		SandboxImage: get("sandboxImage"), Sandboxes: get("sandboxes"), Network: get("network"),
		JWTIssuer: get("jwtIssuer"), JWTAudience: get("jwtAudience"), AlarmEmail: get("alarmEmail"),
		AnthropicKeyARN: get("anthropicKeySecretArn"), OpenAIKeyARN: get("openaiKeySecretArn"),
		DefaultModel: get("defaultModel"),
		Tracing:      get("tracing"), ADOTLayerARN: get("adotLayerArn"), OTLPEndpoint: get("otlpEndpoint"),
	}
	if s := get("operators"); s != "" {
		p.Operators = strings.Split(s, ",")
	}
	switch v := get("traceContent"); v {
	case "", "false":
	case "true":
		p.TraceContent = true
	default:
		return p, fmt.Errorf("context traceContent=%q: want true or false", v)
	}
	ints := map[string]*int{
		"endpointAzs": &p.EndpointAZs, "throttleBurst": &p.ThrottleBurst,
		"apiConcurrency": &p.APIConcurrency, "modelConcurrency": &p.ModelConcurrency, "toolsConcurrency": &p.ToolsConcurrency,
		"commitConcurrency": &p.CommitConcurrency, "workflowConcurrency": &p.WorkflowConcurrency,
		"isolateConcurrency": &p.IsolateConcurrency, "streamConcurrency": &p.StreamConcurrency, "accountConcurrency": &p.AccountConcurrency,
	}
	for k, dst := range ints {
		if s := get(k); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil {
				return p, fmt.Errorf("context %s=%q: want a number", k, s)
			}
			*dst = n
		}
	}
	if s := get("throttleRate"); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return p, fmt.Errorf("context throttleRate=%q: want a number", s)
		}
		p.ThrottleRate = f
	}
	return p, nil
}
