package contracts

import "context"

// Principal is who makes a request. Name is its identity, recorded as the
// Owner of everything it creates: a token's name locally; on AWS an IAM
// caller's ARN (an assumed-role session normalised to
// "arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION") or a JWT's
// "ISSUER|SUBJECT". An Operator may read and cancel everything; that is the
// only power across principals.
type Principal struct {
	Name     string `json:"name"`
	Operator bool   `json:"operator,omitempty"`
}

// CanRead reports whether p may see a record owned by owner.
func (p Principal) CanRead(owner string) bool { return p.Name != "" && (p.Operator || p.Name == owner) }

// CanAct reports whether p may act in (submit to, approve in, fork, retry,
// schedule) a record owned by owner: only its owner may.
func (p Principal) CanAct(owner string) bool { return p.Name != "" && p.Name == owner }

// CanCancel reports whether p may cancel work owned by owner: its owner or
// an operator.
func (p Principal) CanCancel(owner string) bool { return p.CanRead(owner) }

type principalKey struct{}

// WithPrincipal returns ctx carrying p (the API's authentication puts it
// there; the engine reads it to record who asked).
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal ctx carries (ok=false: none).
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

type bufferedKey struct{}

// WithBufferedResponse marks a request whose response is delivered whole
// (API Gateway's Lambda proxy): it cannot stream, so an event stream is
// refused and the client long-polls.
func WithBufferedResponse(ctx context.Context) context.Context {
	return context.WithValue(ctx, bufferedKey{}, true)
}

// BufferedResponse reports WithBufferedResponse.
func BufferedResponse(ctx context.Context) bool {
	b, _ := ctx.Value(bufferedKey{}).(bool)
	return b
}
