package stack_test

import (
	"strconv"
	"testing"

	"github.com/cairnrun/cairn/infra/stack"
)

// Every function is arm64 on provided.al2023 with the bootstrap handler,
// logs JSON into a log group of the stack that has a retention period.
func TestFunctionsArm64ProvidedJSONLogs(t *testing.T) {
	for _, tp := range all(t) {
		fns := tp.ofType("AWS::Lambda::Function")
		if len(fns) != len(stack.Functions) {
			t.Errorf("%s: %d functions, want %d (no helper functions)", tp.name, len(fns), len(stack.Functions))
		}
		for _, id := range fns {
			p := tp.props(id)
			if js(p["Architectures"]) != `["arm64"]` || p["Runtime"] != "provided.al2023" || p["Handler"] != "bootstrap" {
				t.Errorf("%s %s: architectures %s runtime %v handler %v", tp.name, id, js(p["Architectures"]), p["Runtime"], p["Handler"])
			}
			lc := obj(p["LoggingConfig"])
			if lc["LogFormat"] != "JSON" {
				t.Errorf("%s %s: LogFormat %v", tp.name, id, lc["LogFormat"])
			}
			group, _ := obj(lc["LogGroup"])["Ref"].(string)
			if tp.res[group].Type != "AWS::Logs::LogGroup" || num(tp.props(group)["RetentionInDays"]) <= 0 {
				t.Errorf("%s %s: log group %q not one of the stack's with retention", tp.name, id, group)
			}
			if num(p["MemorySize"]) == 0 || num(p["Timeout"]) == 0 {
				t.Errorf("%s %s: memory %v timeout %v", tp.name, id, p["MemorySize"], p["Timeout"])
			}
		}
	}
}

// Every runtime function gets what backend.FromEnv requires; the lease is
// short and renewed (30 s, a heartbeat every 10 s), so a dead holder's
// lease lapses within half a minute instead of outlasting the longest phase
// timeout; each extra goes where it is used.
func TestFunctionEnvironment(t *testing.T) {
	if stack.LeaseTTLSeconds != 30 || stack.LeaseHeartbeatSeconds != 10 {
		t.Errorf("lease TTL %d s, heartbeat %d s: want 30 s renewed every 10 s", stack.LeaseTTLSeconds, stack.LeaseHeartbeatSeconds)
	}
	dev, prod, local := stacks(t)
	for _, tp := range []*tmpl{dev, prod, local} {
		minTimeout := 0.0
		for _, fn := range []string{stack.FnModel, stack.FnTools, stack.FnCommit, stack.FnWorkflow} {
			if to := num(tp.props(tp.id(tp.s.Functions[fn]))["Timeout"]); minTimeout == 0 || to < minTimeout {
				minTimeout = to
			}
		}
		for _, fn := range []string{stack.FnAPI, stack.FnModel, stack.FnTools, stack.FnCommit, stack.FnRepair, stack.FnWorkflow} {
			env := envOf(tp.props(tp.id(tp.s.Functions[fn])))
			want := map[string]string{
				stack.EnvTable:  ref(tp.id(tp.s.Table)),
				stack.EnvBucket: ref(tp.id(tp.s.Bucket)),
			}
			for name, q := range tp.s.Queues {
				want[stack.QueueEnv(name)] = ref(tp.id(q))
			}
			for k, v := range want {
				if js(env[k]) != v {
					t.Errorf("%s %s: %s = %s, want %s", tp.name, fn, k, js(env[k]), v)
				}
			}
			if str(env[stack.EnvDefaultModel]) == "" {
				t.Errorf("%s %s: no %s", tp.name, fn, stack.EnvDefaultModel)
			}
			// 30: two heartbeats (every TTL/3) may be missed before it
			// lapses, and it lapses long before any phase's timeout.
			ttl, err := strconv.Atoi(str(env[stack.EnvLeaseTTL]))
			if err != nil || ttl != 30 || ttl < 3*stack.LeaseHeartbeatSeconds || float64(ttl) >= minTimeout {
				t.Errorf("%s %s: %s=%v, want 30 (≥ 3 heartbeats of %d s, below the shortest phase timeout %v s)",
					tp.name, fn, stack.EnvLeaseTTL, env[stack.EnvLeaseTTL], stack.LeaseHeartbeatSeconds, minTimeout)
			}
			_, hasCluster := env[stack.EnvSandboxCluster]
			wantCluster := tp.s.Sandbox != nil && (fn == stack.FnTools || fn == stack.FnAPI)
			if hasCluster != wantCluster {
				t.Errorf("%s %s: has %s %v, want %v", tp.name, fn, stack.EnvSandboxCluster, hasCluster, wantCluster)
			}
			if js(env[stack.EnvIsolateFunction]) != ref(tp.id(tp.s.Functions[stack.FnIsolate])) {
				t.Errorf("%s %s: %s = %s", tp.name, fn, stack.EnvIsolateFunction, js(env[stack.EnvIsolateFunction]))
			}
			_, hasKey := env[stack.EnvAnthropicKey]
			if wantKey := tp == prod && (fn == stack.FnAPI || fn == stack.FnModel || fn == stack.FnWorkflow); hasKey != wantKey {
				t.Errorf("%s %s: has %s %v, want %v", tp.name, fn, stack.EnvAnthropicKey, hasKey, wantKey)
			}
		}
		tools := envOf(tp.props(tp.id(tp.s.Functions[stack.FnTools])))
		if b := tp.s.Sandbox; b != nil {
			for k, v := range map[string]string{
				stack.EnvSandboxCluster:        ref(tp.id(b.Cluster)),
				stack.EnvSandboxTaskDefinition: ref(tp.id(b.Task)),
				stack.EnvSandboxContainer:      js(stack.SandboxContainer),
				stack.EnvSandboxSecurityGroups: getAtt(tp.id(b.TaskSG), "GroupId"),
				stack.EnvSandboxKeySecret:      ref(tp.id(b.Key)),
			} {
				if js(tools[k]) != v {
					t.Errorf("%s tools: %s = %s, want %s", tp.name, k, js(tools[k]), v)
				}
			}
			for _, k := range []string{stack.EnvSandboxSubnets, stack.EnvSandboxIdle} {
				if tools[k] == nil {
					t.Errorf("%s tools: no %s", tp.name, k)
				}
			}
		} else if tools[stack.EnvSandboxDir] == nil {
			t.Errorf("%s tools: neither Fargate settings nor %s", tp.name, stack.EnvSandboxDir)
		}
		api := envOf(tp.props(tp.id(tp.s.Functions[stack.FnAPI])))
		if js(api[stack.EnvSchedulerGroup]) != ref(tp.id(tp.s.SchedulerGroup)) ||
			js(api[stack.EnvSchedulerRoleARN]) != getAtt(tp.id(tp.s.SchedulerRole), "Arn") ||
			js(api[stack.EnvWorkflowQueueARN]) != getAtt(tp.id(tp.s.Queues[stack.QueueWorkflow]), "Arn") {
			t.Errorf("%s api: scheduler group %s role %s queue %s", tp.name,
				js(api[stack.EnvSchedulerGroup]), js(api[stack.EnvSchedulerRoleARN]), js(api[stack.EnvWorkflowQueueARN]))
		}
		for _, fn := range []string{stack.FnModel, stack.FnTools, stack.FnCommit, stack.FnRepair, stack.FnWorkflow} {
			if env := envOf(tp.props(tp.id(tp.s.Functions[fn]))); env[stack.EnvSchedulerRoleARN] != nil {
				t.Errorf("%s %s: has the scheduler settings (only api creates schedules)", tp.name, fn)
			}
			if env := envOf(tp.props(tp.id(tp.s.Functions[fn]))); env[stack.EnvOperators] != nil {
				t.Errorf("%s %s: has %s (only api authorizes)", tp.name, fn, stack.EnvOperators)
			}
		}
		// Operators: on the api only, as configured (trimmed), absent when none.
		wantOps := map[*tmpl]string{prod: js("https://issuer.example.com/|oncall,https://issuer.example.com/|sre")}[tp]
		if got := api[stack.EnvOperators]; wantOps == "" && got != nil || wantOps != "" && js(got) != wantOps {
			t.Errorf("%s api: %s = %s, want %s", tp.name, stack.EnvOperators, js(got), wantOps)
		}
	}
}

// The isolate has reserved concurrency and an environment with nothing in
// it — no variable at all, so no secret, reference or resource name.
func TestIsolateReservedConcurrencyAndNoEnvironment(t *testing.T) {
	for _, tp := range all(t) {
		p := tp.props(tp.id(tp.s.Functions[stack.FnIsolate]))
		if num(p["ReservedConcurrentExecutions"]) < 1 {
			t.Errorf("%s isolate: ReservedConcurrentExecutions %v", tp.name, p["ReservedConcurrentExecutions"])
		}
		if p["Environment"] != nil {
			t.Errorf("%s isolate: environment %s, want none", tp.name, js(p["Environment"]))
		}
		if p["VpcConfig"] != nil || p["Layers"] != nil {
			t.Errorf("%s isolate: VpcConfig %v Layers %v", tp.name, p["VpcConfig"], p["Layers"])
		}
	}
}

// The isolate's role has no statement but writing its own log group, and
// no managed policy.
func TestIsolateRoleOnlyWritesItsOwnLogs(t *testing.T) {
	for _, tp := range all(t) {
		role := tp.id(tp.s.Roles[stack.FnIsolate])
		if m := list(tp.props(role)["ManagedPolicyArns"]); len(m) > 0 {
			t.Errorf("%s isolate role: managed policies %s", tp.name, js(m))
		}
		sts := tp.statements(role)
		logs := getAtt(tp.id(tp.s.LogGroups[stack.FnIsolate]), "Arn")
		if len(sts) != 1 || js(sts[0].Actions) != `["logs:CreateLogStream","logs:PutLogEvents"]` ||
			js(sts[0].Resources) != js([]string{logs}) || sts[0].Effect != "Allow" {
			t.Errorf("%s isolate role statements %s, want only log writes to %s", tp.name, js(sts), logs)
		}
	}
}

// Only the workflow driver may invoke a function, and only the isolate.
func TestOnlyWorkflowInvokesOnlyTheIsolate(t *testing.T) {
	for _, tp := range all(t) {
		iso := getAtt(tp.id(tp.s.Functions[stack.FnIsolate]), "Arn")
		for _, fn := range stack.Functions {
			for _, st := range tp.statements(tp.id(tp.s.Roles[fn])) {
				if !st.has("lambda:InvokeFunction") {
					continue
				}
				if fn != stack.FnWorkflow || js(st.Resources) != js([]string{iso}) {
					t.Errorf("%s %s may invoke %s", tp.name, fn, js(st.Resources))
				}
			}
		}
	}
}

// repair's asynchronous invocations (its schedule) are never retried and
// never run late: the next minute's invocation does the same work.
func TestRepairAsyncInvokesAreNotRetried(t *testing.T) {
	for _, tp := range all(t) {
		repair := tp.id(tp.s.Functions[stack.FnRepair])
		var found int
		for _, id := range tp.ofType("AWS::Lambda::EventInvokeConfig") {
			p := tp.props(id)
			if js(p["FunctionName"]) != ref(repair) {
				continue
			}
			found++
			if p["MaximumRetryAttempts"] != 0.0 || num(p["MaximumEventAgeInSeconds"]) != 60 || p["Qualifier"] != "$LATEST" {
				t.Errorf("%s repair EventInvokeConfig %s: want MaximumRetryAttempts 0, MaximumEventAgeInSeconds 60 on $LATEST", tp.name, js(p))
			}
		}
		if found != 1 {
			t.Errorf("%s: %d EventInvokeConfigs for repair, want 1", tp.name, found)
		}
	}
}

// repair makes a pass every few seconds for about 55 s per invocation
// (until its deadline is near), so its timeout is at least 70 s: the loop
// fills most of the minute and the last pass has room to finish.
func TestRepairOutlastsItsLoop(t *testing.T) {
	for _, tp := range all(t) {
		if to := num(tp.props(tp.id(tp.s.Functions[stack.FnRepair]))["Timeout"]); to < 70 {
			t.Errorf("%s repair: Timeout %v s, want ≥ 70 s", tp.name, to)
		}
	}
}

// Every function reserves its concurrency, so long-polls cannot starve the
// phases: the api is capped, each phase reserves at least what its event
// source may invoke at once, repair room for two overlapping invocations,
// and all of it leaves the 100 unreserved executions Lambda requires.
func TestConcurrencyReservedSoLongPollsCannotStarveThePhases(t *testing.T) {
	for _, tp := range all(t) {
		reserved := map[string]float64{}
		total := 0.0
		for _, fn := range stack.Functions {
			n := num(tp.props(tp.id(tp.s.Functions[fn]))["ReservedConcurrentExecutions"])
			if n < 1 {
				t.Errorf("%s %s: no reserved concurrency", tp.name, fn)
			}
			reserved[fn] = n
			total += n
		}
		if reserved[stack.FnAPI] != float64(tp.s.Props.APIConcurrency) || tp.s.Props.APIConcurrency != 100 {
			t.Errorf("%s api: reserved %v (props %d), want the cap, 100 by default", tp.name, reserved[stack.FnAPI], tp.s.Props.APIConcurrency)
		}
		// An open event stream holds one stream invocation for up to 10
		// minutes: capped like the api, 50 by default.
		if reserved[stack.FnStream] != float64(tp.s.Props.StreamConcurrency) || tp.s.Props.StreamConcurrency != 50 {
			t.Errorf("%s stream: reserved %v (props %d), want the cap, 50 by default", tp.name, reserved[stack.FnStream], tp.s.Props.StreamConcurrency)
		}
		if reserved[stack.FnRepair] < 2 {
			t.Errorf("%s repair: reserved %v, want ≥ 2 (a 70-s invocation overlaps the next minute's)", tp.name, reserved[stack.FnRepair])
		}
		for _, id := range tp.ofType("AWS::Lambda::EventSourceMapping") {
			m := tp.props(id)
			fid, _ := obj(m["FunctionName"])["Ref"].(string)
			maxConc := num(obj(m["ScalingConfig"])["MaximumConcurrency"])
			if n := num(tp.props(fid)["ReservedConcurrentExecutions"]); n < maxConc {
				t.Errorf("%s %s: reserved %v < its event source's maximum concurrency %v", tp.name, fid, n, maxConc)
			}
		}
		if limit := float64(tp.s.Props.AccountConcurrency - stack.UnreservedMinimum); total > limit {
			t.Errorf("%s: %v reserved, more than account %d − %d unreserved", tp.name, total, tp.s.Props.AccountConcurrency, stack.UnreservedMinimum)
		}
	}
}
