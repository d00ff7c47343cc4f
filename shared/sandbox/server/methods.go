package server

import (
	"context"
	"fmt"
	"net/http"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/proto"
)

// handler runs one method: decode the body into its request, call the
// sandbox, return the result to encode.
type handler func(ctx context.Context, api contracts.SandboxAPI, decode func(any) error) (any, error)

// methods maps every protocol method to its handler.
var methods = map[string]handler{
	proto.MethodReadFile: op(func(ctx context.Context, api contracts.SandboxAPI, r contracts.ReadFileRequest) (any, error) {
		return api.ReadFile(ctx, r)
	}),
	proto.MethodWriteFile: op(func(ctx context.Context, api contracts.SandboxAPI, r contracts.WriteFileRequest) (any, error) {
		return proto.Empty{}, api.WriteFile(ctx, r)
	}),
	proto.MethodEditFile: op(func(ctx context.Context, api contracts.SandboxAPI, r contracts.EditFileRequest) (any, error) {
		return api.EditFile(ctx, r)
	}),
	proto.MethodListDir: op(func(ctx context.Context, api contracts.SandboxAPI, r proto.PathRequest) (any, error) {
		list, err := api.ListDir(ctx, r.Path)
		if list == nil {
			list = []contracts.FileInfo{}
		}
		return list, err
	}),
	proto.MethodStat: op(func(ctx context.Context, api contracts.SandboxAPI, r proto.PathRequest) (any, error) {
		return api.Stat(ctx, r.Path)
	}),
	proto.MethodRemove: op(func(ctx context.Context, api contracts.SandboxAPI, r proto.RemoveRequest) (any, error) {
		return proto.Empty{}, api.Remove(ctx, r.Path, r.Recursive)
	}),
	proto.MethodMakeDir: op(func(ctx context.Context, api contracts.SandboxAPI, r proto.PathRequest) (any, error) {
		return proto.Empty{}, api.MakeDir(ctx, r.Path)
	}),
	proto.MethodGlob: op(func(ctx context.Context, api contracts.SandboxAPI, r proto.GlobRequest) (any, error) {
		list, err := api.Glob(ctx, r.Pattern)
		if list == nil {
			list = []string{}
		}
		return list, err
	}),
	proto.MethodGrep: op(func(ctx context.Context, api contracts.SandboxAPI, r contracts.GrepRequest) (any, error) {
		return api.Grep(ctx, r)
	}),
	proto.MethodExec: op(func(ctx context.Context, api contracts.SandboxAPI, r contracts.ExecRequest) (any, error) {
		return api.Exec(ctx, r)
	}),
	proto.MethodRunScript: op(func(ctx context.Context, api contracts.SandboxAPI, r contracts.RunScriptRequest) (any, error) {
		return api.RunScript(ctx, r)
	}),
	proto.MethodMCP: op(func(ctx context.Context, api contracts.SandboxAPI, r contracts.MCPRequest) (any, error) {
		host, ok := api.(contracts.MCPHost)
		if !ok {
			return nil, fmt.Errorf("this sandbox runs no MCP servers: %w", contracts.ErrInvalid)
		}
		return host.MCP(ctx, r)
	}),
}

// op adapts a typed method call to a handler.
func op[Req any](fn func(context.Context, contracts.SandboxAPI, Req) (any, error)) handler {
	return func(ctx context.Context, api contracts.SandboxAPI, decode func(any) error) (any, error) {
		var req Req
		if err := decode(&req); err != nil {
			return nil, err
		}
		return fn(ctx, api, req)
	}
}

// call serves POST /v1/<method>. A mutating method runs under a context
// that ignores the client going away — it runs to completion (the command
// has its own timeout) so that its outcome is recorded — and is cancelled
// only by POST /v1/cancel naming its CallID (see cancel) or when Serve
// gives up on in-flight calls at shutdown. Read-only methods stop with the
// request.
func (s *Server) call(w http.ResponseWriter, r *http.Request, method string) {
	ctx := r.Context()
	if proto.Mutating(method) {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(context.WithoutCancel(ctx))
		defer cancel()
		defer context.AfterFunc(s.stop, cancel)()
	}
	res, err := methods[method](ctx, s.api, func(v any) error { return s.decode(w, r, v) })
	if err != nil {
		s.fail(w, r, method, err)
		return
	}
	writeJSON(w, res)
}

// cancel serves POST /v1/cancel: the mutating call of that id, if it runs
// here, is stopped (a command's process group killed) and its outcome
// recorded as cancelled (local.Sandbox.CancelCall); the answer comes once
// it has ended. An unknown or finished id is nothing to do, so a repeat is
// harmless.
func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	var req proto.CancelRequest
	if err := s.decode(w, r, &req); err != nil {
		s.fail(w, r, "cancel", err)
		return
	}
	if req.ID == "" {
		s.fail(w, r, "cancel", fmt.Errorf("cancel: empty call id: %w", contracts.ErrInvalid))
		return
	}
	stopped, err := s.sb.CancelCall(r.Context(), req.ID)
	if err != nil {
		s.fail(w, r, "cancel", err)
		return
	}
	if stopped {
		s.log.InfoContext(r.Context(), "sandboxd: call cancelled", "call_id", req.ID)
	}
	writeJSON(w, proto.CancelResult{Stopped: stopped})
}
