package sandboxtest

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
)

// testEffectOnce: a sandbox with a call ledger runs a mutating request at
// most once per call id — repeated, concurrent, or asked about afterwards.
func testEffectOnce(t *testing.T, s *suite) {
	ledger, ok := s.api.(contracts.CallLedger)
	if !ok {
		t.Skip("this sandbox keeps no call ledger (contracts.CallLedger)")
	}
	if o, err := ledger.CallOutcome(s.ctx, "call-once"); err != nil || o.State != contracts.CallUnknown {
		t.Fatalf("unknown call: %+v, %v", o, err)
	}
	req := contracts.ExecRequest{Command: "echo ran >> once.txt; wc -l < once.txt", CallID: "call-once"}
	var wg sync.WaitGroup
	outs := make([]contracts.ExecResult, 4)
	for i := range outs {
		wg.Go(func() {
			var err error
			if outs[i], err = s.api.Exec(s.ctx, req); err != nil {
				t.Errorf("exec: %v", err)
			}
		})
	}
	wg.Wait()
	for _, o := range outs {
		if strings.TrimSpace(o.Stdout) != "1" {
			t.Fatalf("a repeat saw %q: the command ran more than once", o.Stdout)
		}
	}
	if got := s.content(t, "once.txt"); got != "ran\n" {
		t.Fatalf("once.txt = %q", got)
	}
	o, err := ledger.CallOutcome(s.ctx, "call-once")
	if err != nil || o.State != contracts.CallDone || o.Method != "exec" {
		t.Fatalf("outcome %+v, %v", o, err)
	}
	if _, err := s.api.Exec(s.ctx, contracts.ExecRequest{Command: "true", CallID: "call-once"}); !errors.Is(err, contracts.ErrConflict) {
		t.Fatalf("another request under a recorded id: %v, want ErrConflict", err)
	}
	w := contracts.WriteFileRequest{Path: "w.txt", Content: "x\n", Append: true, CallID: "call-w"}
	noErr(t, "write", s.api.WriteFile(s.ctx, w))
	noErr(t, "write again", s.api.WriteFile(s.ctx, w))
	if got := s.content(t, "w.txt"); got != "x\n" {
		t.Fatalf("w.txt = %q: the append ran twice", got)
	}
}
