package stack

import (
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/interfaces/interfacesawscloudwatch"
	"github.com/aws/jsii-runtime-go"
)

// MetricNamespace is the CloudWatch namespace of the runtime's metrics
// (shared/telemetry.Namespace).
const MetricNamespace = "cairn"

// Metric is one of the runtime's metrics as CloudWatch sees it: each
// function writes an embedded-metric-format line to stdout per record
// (shared/telemetry), published in two dimension sets — "function" (the
// function's short name: api, model, tools, commit, repair, workflow) with
// Dims, and "function" alone.
type Metric struct {
	Name string
	Unit string   // Milliseconds or Count
	Dims []string // besides "function"
}

// The runtime's metrics; TestMetricsMatchTheRuntime reads the same from
// shared/telemetry/metrics.go.
var (
	MetricPhaseDuration  = Metric{"cairn.phase.duration", "Milliseconds", []string{"phase", "outcome"}}
	MetricQueueAge       = Metric{"cairn.queue.age", "Milliseconds", []string{"phase"}}
	MetricModelLatency   = Metric{"cairn.model.latency", "Milliseconds", []string{"provider", "model"}}
	MetricModelTTFT      = Metric{"cairn.model.ttft", "Milliseconds", []string{"provider", "model"}}
	MetricModelTokens    = Metric{"cairn.model.tokens", "Count", []string{"provider", "model", "direction"}}
	MetricToolDuration   = Metric{"cairn.tool.duration", "Milliseconds", []string{"tool", "outcome"}}
	MetricToolFailures   = Metric{"cairn.tool.failures", "Count", []string{"tool"}}
	MetricLeaseConflicts = Metric{"cairn.lease.conflicts", "Count", []string{"phase"}}
	MetricRepairActions  = Metric{"cairn.repair.actions", "Count", []string{"action"}}
	MetricTurns          = Metric{"cairn.turns", "Count", []string{"outcome", "reason"}}

	Metrics = []Metric{MetricPhaseDuration, MetricQueueAge, MetricModelLatency, MetricModelTTFT, MetricModelTokens,
		MetricToolDuration, MetricToolFailures, MetricLeaseConflicts, MetricRepairActions, MetricTurns}
)

// TurnOutcomes are the values of cairn.turns' outcome dimension.
var TurnOutcomes = []string{"committed", "failed", "cancelled"}

// DashboardPeriodSeconds is every graph's period.
const DashboardPeriodSeconds = 300

// Search is a SEARCH over m's full dimension set, {cairn,function,<Dims>}
// (so not the function-only copies), filter added to the metric name's
// term: one series per combination of dimension values.
func (m Metric) Search(stat, filter string) string {
	schema := strings.Join(append([]string{MetricNamespace, "function"}, m.Dims...), ",")
	term := `MetricName="` + m.Name + `"`
	if filter != "" {
		term += " " + filter
	}
	return fmt.Sprintf("SEARCH('{%s} %s', '%s', %d)", schema, term, stat, DashboardPeriodSeconds)
}

// addDashboard: one page for an operator — turns, phases, queues, models,
// tools, leases and repair from the runtime's metrics, then the alarms'
// states and the Lambda and SQS metrics they watch. Dimension values the
// stack cannot know (models, tools, failure reasons) are SEARCHed.
func (s *Stack) addDashboard() {
	period := awscdk.Duration_Seconds(jsii.Number(DashboardPeriodSeconds))
	expr := func(e, label string) awscloudwatch.IMetric {
		return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression: jsii.String(e), UsingMetrics: &map[string]awscloudwatch.IMetric{}, Label: jsii.String(label), Period: period,
		})
	}
	dim := func(names ...string) string { // a dynamic label: the series' dimension values
		var parts []string
		for _, n := range names {
			parts = append(parts, "${PROP('Dim."+n+"')}")
		}
		return strings.Join(parts, " ")
	}
	byFunction := func(m Metric, stat string, fns ...string) []awscloudwatch.IMetric {
		var out []awscloudwatch.IMetric
		for _, fn := range fns {
			out = append(out, awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
				Namespace: jsii.String(MetricNamespace), MetricName: jsii.String(m.Name),
				DimensionsMap: &map[string]*string{"function": jsii.String(fn)},
				Statistic:     jsii.String(stat), Period: period, Label: jsii.String(fn),
			}))
		}
		return out
	}
	graph := func(title, unit string, left []awscloudwatch.IMetric, right ...awscloudwatch.IMetric) awscloudwatch.IWidget {
		p := &awscloudwatch.GraphWidgetProps{
			Title: jsii.String(title), Left: &left, Width: jsii.Number(8), Height: jsii.Number(6), Period: period,
			LeftYAxis: &awscloudwatch.YAxisProps{Label: jsii.String(unit), ShowUnits: jsii.Bool(false), Min: jsii.Number(0)},
		}
		if len(right) > 0 {
			p.Right = &right
			p.RightYAxis = &awscloudwatch.YAxisProps{ShowUnits: jsii.Bool(false), Min: jsii.Number(0)}
		}
		return awscloudwatch.NewGraphWidget(p)
	}
	ms, count := "ms", "count"

	var turns []awscloudwatch.IMetric
	for _, o := range TurnOutcomes {
		turns = append(turns, expr("SUM("+MetricTurns.Search("Sum", `outcome="`+o+`"`)+")", o))
	}
	phases := []string{FnModel, FnTools, FnCommit, FnWorkflow}
	var lambdaErrors, throttles, dlqs []awscloudwatch.IMetric
	for _, fn := range Functions {
		o := &awscloudwatch.MetricOptions{Period: period, Statistic: jsii.String("Sum"), Label: jsii.String(fn)}
		lambdaErrors = append(lambdaErrors, s.Functions[fn].MetricErrors(o))
		throttles = append(throttles, s.Functions[fn].MetricThrottles(o))
	}
	for _, q := range Queues {
		dlqs = append(dlqs, s.Queues[DLQ(q)].MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
			Period: period, Statistic: jsii.String("Maximum"), Label: jsii.String(DLQ(q)),
		}))
	}
	alarms := make([]interfacesawscloudwatch.IAlarmRef, len(s.Alarms))
	for i, a := range s.Alarms {
		alarms[i] = a
	}

	rows := [][]awscloudwatch.IWidget{
		{awscloudwatch.NewTextWidget(&awscloudwatch.TextWidgetProps{Width: jsii.Number(24), Height: jsii.Number(2), Markdown: jsii.String(
			"## cairn " + s.Props.Prefix + "\nThe runtime's metrics (namespace `cairn`, embedded-metric-format lines in each function's log; " +
				"`function` is the function's short name), then the alarms and the Lambda and SQS metrics they watch. infra/README.md.")})},
		{
			graph("Turns ended, by outcome (Sum)", count, turns),
			graph("Turns not committed, by outcome and reason (Sum)", count, []awscloudwatch.IMetric{
				expr(MetricTurns.Search("Sum", `NOT outcome="committed"`), dim("outcome", "reason"))}),
			awscloudwatch.NewAlarmStatusWidget(&awscloudwatch.AlarmStatusWidgetProps{
				Title: jsii.String("Alarms"), Alarms: &alarms, Width: jsii.Number(8), Height: jsii.Number(6)}),
		},
		{
			graph("Phase duration p50", ms, []awscloudwatch.IMetric{expr(MetricPhaseDuration.Search("p50", ""), dim("phase", "outcome"))}),
			graph("Phase duration p99", ms, []awscloudwatch.IMetric{expr(MetricPhaseDuration.Search("p99", ""), dim("phase", "outcome"))}),
			graph("Phase duration p99, by function", ms, byFunction(MetricPhaseDuration, "p99", phases...)),
		},
		{
			graph("Queue age at receipt (Maximum)", ms, []awscloudwatch.IMetric{expr(MetricQueueAge.Search("Maximum", ""), dim("phase"))}),
			graph("Lease conflicts (Sum)", count, []awscloudwatch.IMetric{expr(MetricLeaseConflicts.Search("Sum", ""), dim("phase"))}),
			graph("Repair actions (Sum)", count, []awscloudwatch.IMetric{expr(MetricRepairActions.Search("Sum", ""), dim("action"))}),
		},
		{
			graph("Model latency p50 / p99", ms, []awscloudwatch.IMetric{
				expr(MetricModelLatency.Search("p50", ""), "p50 "+dim("model")), expr(MetricModelLatency.Search("p99", ""), "p99 "+dim("model"))}),
			graph("Model time to first token p50 / p99", ms, []awscloudwatch.IMetric{
				expr(MetricModelTTFT.Search("p50", ""), "p50 "+dim("model")), expr(MetricModelTTFT.Search("p99", ""), "p99 "+dim("model"))}),
			graph("Model tokens (Sum)", count, []awscloudwatch.IMetric{expr(MetricModelTokens.Search("Sum", ""), dim("model", "direction"))}),
		},
		{
			graph("Tool duration p99", ms, []awscloudwatch.IMetric{expr(MetricToolDuration.Search("p99", ""), dim("tool", "outcome"))}),
			graph("Tool failures (Sum)", count, []awscloudwatch.IMetric{expr(MetricToolFailures.Search("Sum", ""), dim("tool"))}),
			graph("Turns ended, by function (Sum)", count, byFunction(MetricTurns, "Sum", FnAPI, FnModel, FnTools, FnCommit, FnRepair, FnWorkflow)),
		},
		{
			graph("Lambda errors (Sum)", count, lambdaErrors),
			graph("Lambda throttles (Sum)", count, throttles),
			graph("DLQ depth (Maximum)", count, dlqs),
		},
	}
	widgets := make([]*[]awscloudwatch.IWidget, len(rows))
	for i := range rows {
		widgets[i] = &rows[i]
	}
	s.Dashboard = awscloudwatch.NewDashboard(s.Stack, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DashboardName:   jsii.String(dashboardName(s.Props.Prefix, *awscdk.Aws_REGION())),
		DefaultInterval: awscdk.Duration_Hours(jsii.Number(3)),
		Widgets:         &widgets,
	})
}
