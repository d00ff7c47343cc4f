package stack

import (
	"fmt"
	"sort"
	"strings"
)

// Lambda concurrency. Every function reserves what it may use, so none can
// take another's share of the account's concurrency: the api is capped (a
// client long-polling `events?wait=` holds one api invocation for up to
// its wait, and enough of them would otherwise take every execution the
// phases need), each phase reserves its event source's maximum
// concurrency, repair reserves room for two overlapping invocations (its
// timeout is longer than its schedule's minute), the isolate keeps what
// scripts may use, and the stream function is capped as the api is (an
// open event stream holds one invocation for up to 10 minutes).
const (
	// UnreservedMinimum: Lambda refuses a reservation that leaves fewer
	// unreserved executions than this in the account.
	UnreservedMinimum = 100
	// RepairConcurrency: a repair invocation makes passes for ~55 s and
	// may take up to its timeout (70 s), so the next minute's invocation
	// can overlap it.
	RepairConcurrency = 2

	defaultAPIConcurrency     = 100
	defaultStreamConcurrency  = 50
	defaultAccountConcurrency = 1000 // Lambda's default quota per account and region
)

// concurrencyDefaults fills and checks the reserved concurrency of every
// function against the account's limit.
func (p *Props) concurrencyDefaults() error {
	for _, c := range []struct {
		key  string
		v    *int
		def  int
		min  int
		max  int
		what string
	}{
		{"apiConcurrency", &p.APIConcurrency, defaultAPIConcurrency, 1, 0, "the api function's cap"},
		{"modelConcurrency", &p.ModelConcurrency, specs[FnModel].maxConc, 2, 1000, "the model queue's maximum concurrency"},
		{"toolsConcurrency", &p.ToolsConcurrency, specs[FnTools].maxConc, 2, 1000, "the tools queue's maximum concurrency"},
		{"commitConcurrency", &p.CommitConcurrency, specs[FnCommit].maxConc, 2, 1000, "the commit queue's maximum concurrency"},
		{"workflowConcurrency", &p.WorkflowConcurrency, specs[FnWorkflow].maxConc, 2, 1000, "the workflow queue's maximum concurrency"},
		{"isolateConcurrency", &p.IsolateConcurrency, 10, 1, 0, "the isolate's reservation"},
		{"streamConcurrency", &p.StreamConcurrency, defaultStreamConcurrency, 1, 0, "the stream function's cap"},
		{"accountConcurrency", &p.AccountConcurrency, defaultAccountConcurrency, UnreservedMinimum + 1, 0, "the account's Lambda concurrency limit"},
	} {
		if *c.v == 0 {
			*c.v = c.def
		}
		if *c.v < c.min || (c.max > 0 && *c.v > c.max) {
			want := fmt.Sprintf("at least %d", c.min)
			if c.max > 0 {
				want = fmt.Sprintf("%d..%d", c.min, c.max)
			}
			return fmt.Errorf("%s %d (%s): want %s", c.key, *c.v, c.what, want)
		}
	}
	reserved := p.ReservedConcurrency()
	total := 0
	var parts []string
	for _, fn := range Functions {
		total += reserved[fn]
		parts = append(parts, fmt.Sprintf("%s %d", fn, reserved[fn]))
	}
	if total > p.AccountConcurrency-UnreservedMinimum {
		sort.Strings(parts)
		return fmt.Errorf("reserved concurrency %d (%s) leaves fewer than the %d unreserved executions Lambda requires of accountConcurrency %d: lower apiConcurrency or a phase's concurrency, or raise the account's limit (Service Quotas) and accountConcurrency",
			total, strings.Join(parts, ", "), UnreservedMinimum, p.AccountConcurrency)
	}
	return nil
}

// ReservedConcurrency is each function's ReservedConcurrentExecutions
// (props with defaults applied).
func (p Props) ReservedConcurrency() map[string]int {
	return map[string]int{
		FnAPI:      p.APIConcurrency,
		FnModel:    p.ModelConcurrency,
		FnTools:    p.ToolsConcurrency,
		FnCommit:   p.CommitConcurrency,
		FnWorkflow: p.WorkflowConcurrency,
		FnRepair:   RepairConcurrency,
		FnIsolate:  p.IsolateConcurrency,
		FnStream:   p.StreamConcurrency,
	}
}
