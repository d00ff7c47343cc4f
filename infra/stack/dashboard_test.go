package stack_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/infra/stack"
)

// wantMetrics is the runtime's metric contract as issue 18 states it:
// name → unit and dimensions besides "function".
var wantMetrics = map[string]struct {
	unit string
	dims []string
}{
	"cairn.phase.duration":  {"Milliseconds", []string{"phase", "outcome"}},
	"cairn.queue.age":       {"Milliseconds", []string{"phase"}},
	"cairn.model.latency":   {"Milliseconds", []string{"provider", "model"}},
	"cairn.model.ttft":      {"Milliseconds", []string{"provider", "model"}},
	"cairn.model.tokens":    {"Count", []string{"provider", "model", "direction"}},
	"cairn.tool.duration":   {"Milliseconds", []string{"tool", "outcome"}},
	"cairn.tool.failures":   {"Count", []string{"tool"}},
	"cairn.lease.conflicts": {"Count", []string{"phase"}},
	"cairn.repair.actions":  {"Count", []string{"action"}},
	"cairn.turns":           {"Count", []string{"outcome", "reason"}},
}

// flatten is a template value as a string: Fn::Join's parts joined, the
// region us-east-1, a Ref "ref:<id>", a GetAtt "<attr>:<id>".
func flatten(t *testing.T, v any) string {
	switch x := v.(type) {
	case string:
		return x
	case map[string]any:
		if r, ok := x["Ref"].(string); ok {
			if r == "AWS::Region" {
				return "us-east-1"
			}
			return "ref:" + r
		}
		if g := list(x["Fn::GetAtt"]); len(g) == 2 {
			return str(g[1]) + ":" + str(g[0])
		}
		if j := list(x["Fn::Join"]); len(j) == 2 {
			var parts []string
			for _, p := range list(j[1]) {
				parts = append(parts, flatten(t, p))
			}
			return strings.Join(parts, str(j[0]))
		}
	}
	t.Fatalf("flatten: %s", js(v))
	return ""
}

// board is a dashboard's body, parsed.
type board struct {
	Widgets []struct {
		Type       string `json:"type"`
		Properties struct {
			Title   string   `json:"title"`
			Metrics [][]any  `json:"metrics"`
			Alarms  []string `json:"alarms"`
		} `json:"properties"`
	} `json:"widgets"`
}

func (tp *tmpl) dashboard(t *testing.T) board {
	t.Helper()
	ids := tp.ofType("AWS::CloudWatch::Dashboard")
	if len(ids) != 1 {
		t.Fatalf("%s: dashboards %v, want one", tp.name, ids)
	}
	var b board
	body := flatten(t, tp.props(ids[0])["DashboardBody"])
	if err := json.Unmarshal([]byte(body), &b); err != nil {
		t.Fatalf("%s: dashboard body: %v\n%s", tp.name, err, body)
	}
	return b
}

// searchRe: SEARCH('{schema} terms', 'stat', period).
var searchRe = regexp.MustCompile(`SEARCH\('\{([^}]*)\} ([^']*)', '([^']+)', ([0-9]+)\)`)
var metricNameRe = regexp.MustCompile(`MetricName="([^"]+)"`)

// The dashboard graphs each of the runtime's ten metrics in namespace
// cairn with a SEARCH over exactly the dimension set the functions publish
// ({cairn,function,<its dimensions>}), at a statistic fit for its unit —
// and every SEARCH on it names one of them so; graphs without SEARCH use
// the function-only set; the Lambda errors and throttles of every
// function, every DLQ's depth and every alarm's state are on it. The stack
// outputs its name, <prefix>-<region>.
func TestDashboardGraphsEveryMetric(t *testing.T) {
	if len(stack.Metrics) != len(wantMetrics) {
		t.Errorf("stack.Metrics has %d metrics, want %d", len(stack.Metrics), len(wantMetrics))
	}
	for _, m := range stack.Metrics {
		w, ok := wantMetrics[m.Name]
		if !ok || m.Unit != w.unit || !slices.Equal(m.Dims, w.dims) {
			t.Errorf("stack metric %+v, want %+v", m, w)
		}
	}
	// Statistics the page must show of each (the rest may add more).
	need := map[string][]string{
		"cairn.phase.duration": {"p50", "p99"}, "cairn.queue.age": {"Maximum"},
		"cairn.model.latency": {"p50", "p99"}, "cairn.model.ttft": {"p50", "p99"}, "cairn.model.tokens": {"Sum"},
		"cairn.tool.duration": {"p99"}, "cairn.tool.failures": {"Sum"}, "cairn.lease.conflicts": {"Sum"},
		"cairn.repair.actions": {"Sum"}, "cairn.turns": {"Sum"},
	}
	for _, tp := range all(t) {
		b := tp.dashboard(t)
		seen := map[string][]string{} // metric → statistics searched
		var plain, lambda, sqs []string
		for _, w := range b.Widgets {
			for _, m := range w.Properties.Metrics {
				if len(m) == 0 {
					continue
				}
				if opts, ok := m[0].(map[string]any); ok { // an expression
					e := str(opts["expression"])
					found := searchRe.FindAllStringSubmatch(e, -1)
					if len(found) == 0 {
						t.Errorf("%s %q: expression %q has no SEARCH", tp.name, w.Properties.Title, e)
					}
					for _, s := range found {
						schema, terms, stat := strings.Split(s[1], ","), s[2], s[3]
						names := metricNameRe.FindAllStringSubmatch(terms, -1)
						if len(names) != 1 {
							t.Errorf("%s %q: SEARCH %q names %d metrics, want one", tp.name, w.Properties.Title, s[0], len(names))
							continue
						}
						name := names[0][1]
						want, known := wantMetrics[name]
						if !known {
							t.Errorf("%s %q: SEARCH %q names %q, no metric of the runtime's", tp.name, w.Properties.Title, s[0], name)
							continue
						}
						wantSchema := append([]string{stack.MetricNamespace, "function"}, want.dims...)
						got := slices.Clone(schema[1:])
						sort.Strings(got)
						sortedWant := slices.Clone(wantSchema[1:])
						sort.Strings(sortedWant)
						if schema[0] != "cairn" || !slices.Equal(got, sortedWant) || s[4] != strconv.Itoa(stack.DashboardPeriodSeconds) {
							t.Errorf("%s %q: SEARCH %q, want schema {%s} and period %d", tp.name, w.Properties.Title, s[0], strings.Join(wantSchema, ","), stack.DashboardPeriodSeconds)
							continue
						}
						if fits := (want.unit == "Count") == (stat == "Sum"); !fits {
							t.Errorf("%s %q: %s (%s) at %s", tp.name, w.Properties.Title, name, want.unit, stat)
						}
						seen[name] = append(seen[name], stat)
					}
					continue
				}
				// [namespace, metric, dim, value, …, {options}]
				key := make([]string, 0, len(m))
				for _, v := range m {
					if s, ok := v.(string); ok {
						key = append(key, s)
					}
				}
				switch key[0] {
				case stack.MetricNamespace:
					if _, known := wantMetrics[key[1]]; !known || len(key) != 4 || key[2] != "function" || !slices.Contains(stack.Functions, key[3]) {
						t.Errorf("%s %q: metric %v, want a cairn metric by function alone", tp.name, w.Properties.Title, key)
					}
					plain = append(plain, key[1])
				case "AWS/Lambda":
					lambda = append(lambda, strings.Join(key[1:], " "))
				case "AWS/SQS":
					sqs = append(sqs, strings.Join(key[1:], " "))
				default:
					t.Errorf("%s %q: metric %v", tp.name, w.Properties.Title, key)
				}
			}
		}
		for name, stats := range need {
			for _, st := range stats {
				if !slices.Contains(seen[name], st) {
					t.Errorf("%s: the dashboard has no SEARCH of %s at %s (has %v)", tp.name, name, st, seen[name])
				}
			}
		}
		if len(plain) == 0 {
			t.Errorf("%s: no graph by the function-only dimension set", tp.name)
		}
		for _, fn := range stack.Functions {
			id := tp.id(tp.s.Functions[fn])
			for _, m := range []string{"Errors", "Throttles"} {
				if !slices.Contains(lambda, m+" FunctionName ref:"+id) {
					t.Errorf("%s: no Lambda %s of %s on the dashboard (%v)", tp.name, m, fn, lambda)
				}
			}
		}
		for _, q := range stack.Queues {
			if want := "ApproximateNumberOfMessagesVisible QueueName QueueName:" + tp.id(tp.s.Queues[stack.DLQ(q)]); !slices.Contains(sqs, want) {
				t.Errorf("%s: no depth of %s on the dashboard (%v)", tp.name, stack.DLQ(q), sqs)
			}
		}
		var shown []string
		for _, w := range b.Widgets {
			shown = append(shown, w.Properties.Alarms...)
		}
		alarms := tp.ofType("AWS::CloudWatch::Alarm")
		for _, a := range alarms {
			if !slices.Contains(shown, "Arn:"+a) {
				t.Errorf("%s: alarm %s is not on the dashboard", tp.name, a)
			}
		}
		if len(shown) != len(alarms) {
			t.Errorf("%s: %d alarms shown, the stack has %d", tp.name, len(shown), len(alarms))
		}

		id := tp.ofType("AWS::CloudWatch::Dashboard")[0]
		if got, _ := deployed(tp.props(id)["DashboardName"], stackIDFirst); got != tp.s.Props.Prefix+"-"+deployRegion {
			t.Errorf("%s: dashboard name deploys as %q, want %s-%s", tp.name, got, tp.s.Props.Prefix, deployRegion)
		}
		out := obj(obj((*tp.a.ToJSON())["Outputs"])["DashboardName"])
		if js(out["Value"]) != ref(id) {
			t.Errorf("%s: output DashboardName %s, want %s", tp.name, js(out["Value"]), ref(id))
		}
	}
}

// Turns by outcome: the sum over every function and reason of each
// outcome the runtime records, one line each.
func TestDashboardSumsTurnsByOutcome(t *testing.T) {
	dev, _, _ := stacks(t)
	var lines []string
	for _, w := range dev.dashboard(t).Widgets {
		for _, m := range w.Properties.Metrics {
			if opts, ok := m[0].(map[string]any); ok && strings.HasPrefix(str(opts["expression"]), "SUM(") {
				lines = append(lines, str(opts["label"])+" = "+str(opts["expression"]))
			}
		}
	}
	var want []string
	for _, o := range []string{"committed", "failed", "cancelled"} {
		want = append(want, o+` = SUM(SEARCH('{cairn,function,outcome,reason} MetricName="cairn.turns" outcome="`+o+`"', 'Sum', 300))`)
	}
	if js(lines) != js(want) {
		t.Errorf("turn sums\n got %v\nwant %v", lines, want)
	}
}

// The dashboard's metrics are the runtime's: every instrument declared in
// shared/telemetry/metrics.go (&Instrument{Name, Unit, Dims}) is one of
// stack.Metrics with the same unit and dimensions, and the other way round.
func TestMetricsMatchTheRuntime(t *testing.T) {
	const file = "shared/telemetry/metrics.go"
	if _, err := os.Stat(filepath.Join(repo, file)); err != nil {
		t.Skipf("runtime source not beside infra/: %v", err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(repo, file), nil, 0)
	if err != nil {
		t.Fatalf("reading the runtime's metrics: %v", err)
	}
	runtime := map[string]stack.Metric{}
	ast.Inspect(f, func(n ast.Node) bool {
		cl, ok := n.(*ast.CompositeLit)
		if id, isIdent := cl0(cl); !ok || !isIdent || id != "Instrument" {
			return true
		}
		var m stack.Metric
		for _, e := range cl.Elts {
			kv, ok := e.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			switch k := kv.Key.(*ast.Ident).Name; k {
			case "Name", "Unit":
				lit, _ := kv.Value.(*ast.BasicLit)
				if lit == nil {
					t.Errorf("%s: an Instrument's %s is not a literal", file, k)
					continue
				}
				v, _ := strconv.Unquote(lit.Value)
				if k == "Name" {
					m.Name = v
				} else {
					m.Unit = v
				}
			case "Dims":
				dims, _ := kv.Value.(*ast.CompositeLit)
				if dims == nil {
					t.Errorf("%s: an Instrument's Dims is not a literal", file)
					continue
				}
				for _, d := range dims.Elts {
					if lit, ok := d.(*ast.BasicLit); ok {
						v, _ := strconv.Unquote(lit.Value)
						m.Dims = append(m.Dims, v)
					}
				}
			}
		}
		runtime[m.Name] = m
		return true
	})
	if len(runtime) == 0 {
		t.Fatalf("%s declares no &Instrument{…}", file)
	}
	for _, m := range stack.Metrics {
		r, ok := runtime[m.Name]
		if !ok || r.Unit != m.Unit || !slices.Equal(r.Dims, m.Dims) {
			t.Errorf("infra graphs %+v, the runtime records %+v", m, r)
		}
		delete(runtime, m.Name)
	}
	for name := range runtime {
		t.Errorf("the runtime records %s, which the dashboard does not know (stack.Metrics)", name)
	}
}

// cl0 is the type name of a composite literal (Instrument{…}).
func cl0(cl *ast.CompositeLit) (string, bool) {
	if cl == nil {
		return "", false
	}
	id, ok := cl.Type.(*ast.Ident)
	if !ok {
		return "", false
	}
	return id.Name, true
}
