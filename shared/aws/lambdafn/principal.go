package lambdafn

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cairnrun/cairn/shared/contracts"
)

// callerKey marks the caller APIHandler found in an event's authorizer
// context. It is put in the request's context, never in a header: a
// header is whatever the client sent.
type callerKey struct{}

type caller struct {
	name string
	err  error
}

// Caller returns the principal name of the request whose context ctx is,
// as APIHandler (or StreamHandler) read it from the event's authorizer: an IAM caller's ARN
// (normalised by CallerName) or a JWT's "ISSUER|SUBJECT". An event with
// no usable authorizer context is an ErrPermission.
func Caller(ctx context.Context) (string, error) {
	c, ok := ctx.Value(callerKey{}).(caller)
	if !ok {
		return "", fmt.Errorf("the request came through no authorizer (API Gateway's or a function URL's): %w", contracts.ErrPermission)
	}
	return c.name, c.err
}

// CallerName is the principal an API Gateway HTTP API (v2) authorizer
// context names: with IAM authorization the caller's ARN — an
// assumed-role session as arn:PARTITION:sts::ACCOUNT:assumed-role/ROLE/SESSION,
// an IAM user, role or root as arn:PARTITION:iam::ACCOUNT:RESOURCE —
// and with a JWT authorizer the token's issuer and subject,
// "ISSUER|SUBJECT". Anything else (no authorizer, a Lambda authorizer, a
// claim or ARN missing) is an ErrPermission.
func CallerName(rc events.APIGatewayV2HTTPRequestContext) (string, error) {
	a := rc.Authorizer
	switch {
	case a == nil:
		return "", fmt.Errorf("no authorizer context: %w", contracts.ErrPermission)
	case a.IAM != nil:
		return iamCaller(a.IAM.UserARN)
	case a.JWT != nil:
		iss, sub := a.JWT.Claims["iss"], a.JWT.Claims["sub"]
		if iss == "" || sub == "" {
			return "", fmt.Errorf("the JWT names no issuer and subject: %w", contracts.ErrPermission)
		}
		return iss + "|" + sub, nil
	}
	return "", fmt.Errorf("an authorizer other than IAM or JWT: %w", contracts.ErrPermission)
}

// URLCallerName is the principal a Lambda function URL's IAM authorizer
// context (AuthType AWS_IAM) names: the caller's ARN, mapped exactly as
// CallerName maps API Gateway's IAM caller, so one principal has one name
// behind either. No IAM context (AuthType NONE) is an ErrPermission.
func URLCallerName(rc events.LambdaFunctionURLRequestContext) (string, error) {
	if rc.Authorizer == nil || rc.Authorizer.IAM == nil {
		return "", fmt.Errorf("no IAM authorizer context (the function URL's AuthType must be AWS_IAM): %w", contracts.ErrPermission)
	}
	return iamCaller(rc.Authorizer.IAM.UserARN)
}

// iamCaller is the principal name of an IAM caller by the ARN its
// authorizer context reports (API Gateway's and a function URL's alike).
func iamCaller(userARN string) (string, error) { return normalizeARN(userARN) }

// arn is an ARN's parts: arn:PARTITION:SERVICE:REGION:ACCOUNT:RESOURCE.
type arn struct{ partition, service, account, resource string }

func parseARN(s string) (arn, bool) {
	p := strings.SplitN(s, ":", 6)
	if len(p) != 6 || p[0] != "arn" || p[1] == "" || p[2] == "" || p[4] == "" || p[5] == "" {
		return arn{}, false
	}
	return arn{partition: p[1], service: p[2], account: p[4], resource: p[5]}, true
}

func (a arn) String() string {
	return "arn:" + a.partition + ":" + a.service + "::" + a.account + ":" + a.resource
}

// normalizeARN is the principal name of an IAM caller's ARN: an
// assumed-role session is always arn:…:sts::ACCOUNT:assumed-role/ROLE/SESSION
// (also when written with iam as the service), the region is dropped.
func normalizeARN(s string) (string, error) {
	a, ok := parseARN(s)
	if !ok || a.service != "iam" && a.service != "sts" {
		return "", fmt.Errorf("caller %q is not an IAM principal's ARN: %w", s, contracts.ErrPermission)
	}
	if rest, ok := strings.CutPrefix(a.resource, "assumed-role/"); ok {
		role, session, _ := strings.Cut(rest, "/")
		if role == "" || session == "" || strings.Contains(session, "/") {
			return "", fmt.Errorf("caller %q: want assumed-role/ROLE/SESSION: %w", s, contracts.ErrPermission)
		}
		a.service = "sts"
	}
	return a.String(), nil
}

// roleKey is the role a principal name acts as, when it names one: an
// assumed-role session's role or an IAM role ARN (whose path the session
// ARN does not keep), as arn:…:sts::ACCOUNT:assumed-role/ROLE.
func roleKey(name string) (string, bool) {
	a, ok := parseARN(name)
	if !ok {
		return "", false
	}
	var role string
	if rest, ok := strings.CutPrefix(a.resource, "assumed-role/"); ok && (a.service == "sts" || a.service == "iam") {
		role, _, _ = strings.Cut(rest, "/")
	} else if rest, ok := strings.CutPrefix(a.resource, "role/"); ok && a.service == "iam" {
		role = rest[strings.LastIndex(rest, "/")+1:]
	}
	if role == "" {
		return "", false
	}
	return arn{partition: a.partition, service: "sts", account: a.account, resource: "assumed-role/" + role}.String(), true
}

// Operators are the principals that may read and cancel everything
// (CAIRN_OPERATORS on the api function). An entry is a principal name as
// CallerName gives it (an IAM user's or assumed-role session's ARN,
// "ISSUER|SUBJECT"), or a role — arn:…:iam::ACCOUNT:role/[PATH/]ROLE or
// arn:…:sts::ACCOUNT:assumed-role/ROLE — which makes every session of
// that role an operator.
type Operators struct {
	names, roles map[string]bool
}

// ParseOperators reads the entries (blank ones are skipped); an ARN that
// is not an IAM principal's is refused.
func ParseOperators(entries []string) (Operators, error) {
	o := Operators{names: map[string]bool{}, roles: map[string]bool{}}
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if !strings.HasPrefix(e, "arn:") {
			o.names[e] = true
			continue
		}
		if a, ok := parseARN(e); ok && (a.service == "iam" && strings.HasPrefix(a.resource, "role/") ||
			a.service == "sts" && strings.HasPrefix(a.resource, "assumed-role/") && strings.Count(a.resource, "/") == 1) {
			if k, ok := roleKey(e); ok {
				o.roles[k] = true
				continue
			}
		}
		name, err := normalizeARN(e)
		if err != nil {
			return Operators{}, fmt.Errorf("operator %q: want an IAM user, role or assumed-role ARN, or ISSUER|SUBJECT", e)
		}
		o.names[name] = true
	}
	return o, nil
}

// Has reports whether the principal name is an operator.
func (o Operators) Has(name string) bool {
	if o.names[name] {
		return true
	}
	k, ok := roleKey(name)
	return ok && o.roles[k]
}

// Authenticate is api.Config.Authenticate behind API Gateway (and the
// stream function's URL): the principal is the caller APIHandler (or
// StreamHandler) found in the event's authorizer context, an operator when
// ops has it.
func Authenticate(ops Operators) func(*http.Request) (contracts.Principal, error) {
	return func(r *http.Request) (contracts.Principal, error) {
		name, err := Caller(r.Context())
		if err != nil {
			return contracts.Principal{}, err
		}
		return contracts.Principal{Name: name, Operator: ops.Has(name)}, nil
	}
}
