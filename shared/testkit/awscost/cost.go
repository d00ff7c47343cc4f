package awscost

import (
	"fmt"
	"io"
	"strings"
)

// Prices are AWS list prices in us-east-1 in US dollars per million
// requests, as of PricesDate (see docs/PERFORMANCE.md for sources).
const PricesDate = "2026-11-29 (list prices unchanged since the November 2024 DynamoDB on-demand cut)"

var prices = map[string]float64{
	"dynamodb.write": 0.625, // per million write request units (on-demand)
	"dynamodb.read":  0.125, // per million read request units (on-demand, strongly consistent ≤4 KB)
	"sqs.fifo":       0.50,  // per million FIFO requests (64 KB chunks)
	"s3.put":         5.00,  // PUT/COPY/POST/LIST per million
	"s3.get":         0.40,  // GET per million
	"lambda.request": 0.20,  // per million invocations
	"stepfunctions":  25.0,  // Standard, per million state transitions
}

// unit classifies one non-DynamoDB call for pricing and how many priced
// requests n calls are. DynamoDB is priced by request units (Meter), not by
// call: see Report.
func unit(call string, n int64) (string, float64) {
	svc, op, _ := strings.Cut(call, ".")
	switch strings.ToLower(svc) {
	case "sqs":
		switch op {
		case "SendMessage", "ReceiveMessage", "DeleteMessage", "ChangeMessageVisibility", "SendMessageBatch", "DeleteMessageBatch":
			return "sqs.fifo", float64(n)
		}
		return "", 0
	case "s3":
		if op == "GetObject" || op == "HeadObject" {
			return "s3.get", float64(n)
		}
		if op == "PutObject" {
			return "s3.put", float64(n)
		}
	}
	return "", 0
}

// Report is what a benchmark counted: calls by "Service.Operation", the
// DynamoDB request units by operation and by item kind (a Meter's ByOp and
// ByKind), the Lambda invocations, and the agent steps they made.
type Report struct {
	Calls         map[string]int64
	Units         map[string]Units // by "DynamoDB.<Operation>"
	Kinds         map[string]Units // by item kind
	Invocations   int64
	Steps         int64
	PhasesPerStep float64 // Step Functions transitions per agent step
}

// Cost is the priced report, per agent step.
type Cost struct {
	CallsPerStep map[string]float64 // every counted call
	WUPerStep    float64            // DynamoDB write units (table + indexes)
	RUPerStep    float64            // DynamoDB read units
	DynamoCalls  float64            // DynamoDB calls per step
	DollarsPerM  float64            // cairn orchestration, $ per million agent steps
	SFNPerM      float64            // Step Functions Standard, same shape
}

// Price prices r at the list prices of PricesDate.
func (r Report) Price() Cost {
	c := Cost{CallsPerStep: map[string]float64{}}
	steps := float64(r.Steps)
	for k, n := range r.Calls {
		c.CallsPerStep[k] = float64(n) / steps
		if strings.HasPrefix(k, "DynamoDB.") && !ignoredDynamo(k) {
			c.DynamoCalls += float64(n) / steps
		}
		kind, units := unit(k, n)
		c.DollarsPerM += units / steps * prices[kind]
	}
	for _, u := range r.Units {
		c.WUPerStep += u.WU() / steps
		c.RUPerStep += u.RU / steps
	}
	c.DollarsPerM += c.WUPerStep*prices["dynamodb.write"] + c.RUPerStep*prices["dynamodb.read"]
	c.DollarsPerM += float64(r.Invocations) / steps * prices["lambda.request"]
	c.SFNPerM = r.PhasesPerStep * prices["stepfunctions"]
	return c
}

func ignoredDynamo(call string) bool {
	switch strings.TrimPrefix(call, "DynamoDB.") {
	case "DescribeTable", "CreateTable", "UpdateTimeToLive", "DescribeTimeToLive":
		return true
	}
	return false
}

// Print writes the report per agent step: each call kind with its calls,
// request units and dollars per million steps; then the DynamoDB writes by
// item kind (calls, bytes, write units in the table and each index kind);
// then the total next to Step Functions Standard.
func (r Report) Print(w io.Writer) Cost {
	c := r.Price()
	steps := float64(r.Steps)
	fmt.Fprintf(w, "%-34s %9s %9s %9s %11s\n", "call", "calls/st", "WU/st", "RU/st", "$/M steps")
	for _, k := range Keys(r.Calls) {
		if ignoredDynamo(k) {
			continue
		}
		n := r.Calls[k]
		var dollars, wu, ru float64
		if u, ok := r.Units[k]; ok {
			wu, ru = u.WU()/steps, u.RU/steps
			dollars = wu*prices["dynamodb.write"] + ru*prices["dynamodb.read"]
		} else {
			kind, units := unit(k, n)
			dollars = units / steps * prices[kind]
		}
		fmt.Fprintf(w, "%-34s %9.2f %9.2f %9.2f %11.3f\n", k, float64(n)/steps, wu, ru, dollars)
	}
	lam := float64(r.Invocations) / steps
	fmt.Fprintf(w, "%-34s %9.2f %9s %9s %11.3f\n", "Lambda invocations", lam, "", "", lam*prices["lambda.request"])
	if len(r.Kinds) > 0 {
		fmt.Fprintf(w, "%-34s %9s %9s %9s %9s %9s %9s\n", "DynamoDB item kind", "calls/st", "bytes/st", "table WU", "GSI WU", "LSI WU", "RU/st")
		kinds := make(map[string]int64, len(r.Kinds))
		for k := range r.Kinds {
			kinds[k] = 0
		}
		for _, k := range Keys(kinds) {
			u := r.Kinds[k]
			fmt.Fprintf(w, "%-34s %9.2f %9.0f %9.2f %9.2f %9.2f %9.2f\n", k, float64(u.Calls)/steps, float64(u.Bytes)/steps,
				u.TableWU/steps, u.GSIWU/steps, u.LSIWU/steps, u.RU/steps)
		}
	}
	fmt.Fprintf(w, "DynamoDB per step: %.2f calls, %.2f WU, %.2f RU\n", c.DynamoCalls, c.WUPerStep, c.RUPerStep)
	fmt.Fprintf(w, "%-34s %11.3f\n", "TOTAL cairn orchestration $/M", c.DollarsPerM)
	fmt.Fprintf(w, "%-34s %11.3f (%.0f transitions/step)\n", "Step Functions Standard $/M", c.SFNPerM, r.PhasesPerStep)
	fmt.Fprintf(w, "ratio cairn / Step Functions: %.2f (target ≤ 0.10); prices %s\n", c.DollarsPerM/c.SFNPerM, PricesDate)
	return c
}
