package placement

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Router is the SandboxProvider of a deployment that serves several sandbox
// kinds: it hands each Acquire to the provider of spec.Kind (empty =
// Default).
//
// Release fans out to every provider, in kind order, and joins their
// errors. The router keeps no state of its own — which kind holds a session
// is known from the session's record (process, fargate) or not at all
// (local, which has nothing to free) — so a Release in any process frees
// the sandbox whichever kind placed it; each provider ignores sessions it
// does not hold.
type Router struct {
	Default string
	Kinds   map[string]contracts.SandboxProvider
}

var (
	_ contracts.SandboxProvider = (*Router)(nil)
	_ contracts.SandboxChecker  = (*Router)(nil)
)

// Acquire picks the provider of spec.Kind and passes it the spec with Kind
// filled in (so "" and the default kind's name fingerprint alike). An
// unknown kind is an error wrapping contracts.ErrInvalid that lists the
// kinds served.
//
// The sandbox it returns is Traced, and the Acquire itself is a span
// "cairn.sandbox acquire" (trace.go).
func (r *Router) Acquire(ctx context.Context, sessionID string, spec contracts.SandboxSpec) (_ contracts.SandboxAPI, err error) {
	kind := spec.Kind
	if kind == "" {
		kind = r.Default
	}
	ctx, span := opSpan(ctx, kind, sessionID, "acquire")
	defer func() { done(span, err) }()
	p, ok := r.Kinds[kind]
	if !ok || p == nil {
		return nil, fmt.Errorf("acquiring sandbox for session %s: sandbox kind %q is not served by this deployment (it serves %s): %w",
			sessionID, kind, r.served(), contracts.ErrInvalid)
	}
	spec.Kind = kind
	sb, err := p.Acquire(ctx, sessionID, spec)
	if err != nil || sb == nil {
		return sb, err
	}
	return Traced(sb, kind, sessionID), nil
}

// Check reports, before a session is created, whether its sandbox spec can
// be served here: a known kind and no negative size, then whatever the
// kind's provider checks (a contracts.SandboxChecker: its network and
// workspace options).
func (r *Router) Check(spec contracts.SandboxSpec) error {
	if spec.CPU < 0 || spec.MemoryMiB < 0 {
		return fmt.Errorf("sandbox cpu and memory_mib must not be negative: %w", contracts.ErrInvalid)
	}
	kind := spec.Kind
	if kind == "" {
		kind = r.Default
	}
	p, ok := r.Kinds[kind]
	if !ok || p == nil {
		return fmt.Errorf("sandbox kind %q is not served by this deployment (it serves %s): %w", kind, r.served(), contracts.ErrInvalid)
	}
	if c, ok := p.(contracts.SandboxChecker); ok {
		spec.Kind = kind
		return c.Check(spec)
	}
	return nil
}

// Release asks every provider to release the session and joins the errors
// (one span, "cairn.sandbox release", its kind every kind served).
func (r *Router) Release(ctx context.Context, sessionID string) (err error) {
	ctx, span := opSpan(ctx, strings.Join(r.kinds(), ","), sessionID, "release")
	defer func() { done(span, err) }()
	var errs []error
	for _, kind := range r.kinds() {
		if err := r.Kinds[kind].Release(ctx, sessionID); err != nil {
			errs = append(errs, fmt.Errorf("releasing %s sandbox: %w", kind, err))
		}
	}
	return errors.Join(errs...)
}

func (r *Router) kinds() []string {
	var ks []string
	for k, p := range r.Kinds {
		if p != nil {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	return ks
}

func (r *Router) served() string {
	ks := r.kinds()
	if len(ks) == 0 {
		return "none"
	}
	quoted := make([]string, len(ks))
	for i, k := range ks {
		quoted[i] = fmt.Sprintf("%q", k)
		if k == r.Default {
			quoted[i] += " (default)"
		}
	}
	return strings.Join(quoted, ", ")
}

// CheckFargateNetwork is the network rule of fargate sandboxes, shared by
// the fargate provider and the functions that check specs without linking
// ECS: "none" always, "internet" only on the public network with its
// security groups configured. network names the deployment's network for
// the message.
func CheckFargateNetwork(spec contracts.SandboxSpec, network string, public bool, internetGroups int) error {
	switch spec.Network {
	case "", contracts.NetworkNone:
		return nil
	case contracts.NetworkInternet:
		if !public {
			return fmt.Errorf("sandbox network %q: this deployment's fargate sandboxes are on the %s network, which has no route to the internet (deploy with network=public): %w",
				spec.Network, network, contracts.ErrInvalid)
		}
		if internetGroups == 0 {
			return fmt.Errorf("sandbox network %q: no security group for it is configured (CAIRN_SANDBOX_INTERNET_SECURITY_GROUPS): %w", spec.Network, contracts.ErrInvalid)
		}
		return nil
	}
	return fmt.Errorf("sandbox network %q: want %q or %q: %w", spec.Network, contracts.NetworkNone, contracts.NetworkInternet, contracts.ErrInvalid)
}
