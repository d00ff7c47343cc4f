package proto_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/proto"
)

func TestCodeAndErr(t *testing.T) {
	tests := []struct {
		err      error
		code     string
		status   int
		sentinel error // what Err(code, …) matches
	}{
		{fmt.Errorf("reading x: %w", contracts.ErrNotFound), "not_found", 404, contracts.ErrNotFound},
		{fmt.Errorf("bad: %w", contracts.ErrInvalid), "invalid", 400, contracts.ErrInvalid},
		{fmt.Errorf("path escapes: %w", contracts.ErrPermission), "permission", 403, contracts.ErrPermission},
		{fmt.Errorf("slow: %w", contracts.ErrTimeout), "timeout", 504, contracts.ErrTimeout},
		{fmt.Errorf("walk: %w", context.DeadlineExceeded), "timeout", 504, contracts.ErrTimeout},
		{fmt.Errorf("big: %w", contracts.ErrTooLarge), "too_large", 413, contracts.ErrTooLarge},
		{fmt.Errorf("other request: %w", contracts.ErrConflict), "conflict", 409, contracts.ErrConflict},
		{fmt.Errorf("there: %w", contracts.ErrExists), "exists", 409, contracts.ErrExists},
		{fmt.Errorf("gone: %w", contracts.ErrUnavailable), "unavailable", 503, contracts.ErrUnavailable},
		{fmt.Errorf("exec: %w", context.Canceled), "cancelled", 409, context.Canceled},
		{errors.New("disk on fire"), "internal", 500, nil},
		{proto.Err("unauthorized", "wrong token"), "unauthorized", 401, contracts.ErrPermission},
		{proto.Err("internal", "boom"), "internal", 500, nil},
	}
	for _, tc := range tests {
		code, status := proto.Code(tc.err)
		if code != tc.code || status != tc.status {
			t.Errorf("Code(%v) = %q, %d; want %q, %d", tc.err, code, status, tc.code, tc.status)
		}
		if got := proto.Status(code); got != status {
			t.Errorf("Status(%q) = %d, want %d", code, got, status)
		}
		back := proto.Err(code, tc.err.Error())
		if back.Error() != tc.err.Error() {
			t.Errorf("Err(%q).Error() = %q", code, back.Error())
		}
		if tc.sentinel != nil && !errors.Is(back, tc.sentinel) {
			t.Errorf("Err(%q) does not match %v", code, tc.sentinel)
		}
		for _, other := range []error{contracts.ErrNotFound, contracts.ErrInvalid, contracts.ErrPermission, contracts.ErrTimeout,
			contracts.ErrTooLarge, contracts.ErrConflict, contracts.ErrExists, contracts.ErrUnavailable} {
			if other != tc.sentinel && errors.Is(back, other) {
				t.Errorf("Err(%q) also matches %v", code, other)
			}
		}
		// A decoded error encodes to the same code again.
		if again, _ := proto.Code(back); again != code {
			t.Errorf("Code(Err(%q)) = %q", code, again)
		}
	}
	if code, status := proto.Code(nil); code != "" || status != http.StatusOK {
		t.Errorf("Code(nil) = %q, %d", code, status)
	}
	if err := proto.Err("brand_new", "m"); errors.Unwrap(err) != nil || err.Error() != "m" {
		t.Errorf("unknown code: %v unwraps to %v", err, errors.Unwrap(err))
	}
	if proto.Status("brand_new") != 500 {
		t.Error("unknown code status")
	}
}

func TestRoutes(t *testing.T) {
	if len(proto.Methods) != 12 {
		t.Fatalf("%d methods, want the 11 of SandboxAPI and MCPHost's one", len(proto.Methods))
	}
	for _, m := range proto.Methods {
		got, ok := proto.MethodOf(proto.Path(m))
		if !ok || got != m {
			t.Errorf("MethodOf(Path(%q)) = %q, %v", m, got, ok)
		}
		if proto.Mutating(m) && proto.Idempotent(m) {
			t.Errorf("%s is both mutating and idempotent", m)
		}
	}
	for _, p := range []string{"/v1/", "/v1/nope", "/v2/read_file", "/read_file", "/v1/read_file/x", "/v1/calls", proto.PathCancel} {
		if _, ok := proto.MethodOf(p); ok {
			t.Errorf("MethodOf(%q) accepted", p)
		}
	}
	if got := proto.CallPath("a/b c"); got != "/v1/calls/a%2Fb%20c" {
		t.Errorf("CallPath = %q", got)
	}
}
