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

// unit classifies one call for pricing and how many units it costs
// (transactional writes cost two write units per item; items are assumed
// ≤ 1 KB, which the stored JSON bodies of a scripted turn are).
func unit(call string, n int64) (string, float64) {
	svc, op, _ := strings.Cut(call, ".")
	switch strings.ToLower(svc) {
	case "dynamodb":
		switch op {
		case "GetItem", "Query", "BatchGetItem", "Scan":
			return "dynamodb.read", float64(n)
		case "TransactWriteItems":
			return "dynamodb.write", 2 * 2 * float64(n) // two items, two units each (our transactions write 2)
		case "DescribeTable", "CreateTable", "UpdateTimeToLive", "DescribeTimeToLive":
			return "", 0
		default:
			return "dynamodb.write", float64(n)
		}
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

// CostReport prints, per agent step, each call kind, its price and the
// total in dollars per million agent steps, next to Step Functions
// Standard for the same turn shape (one transition per phase).
func CostReport(w io.Writer, calls map[string]int64, invocations int64, steps int64, phasesPerStep float64) (float64, float64) {
	total := 0.0
	fmt.Fprintf(w, "%-40s %10s %14s\n", "call", "per step", "$/M steps")
	for _, k := range Keys(calls) {
		kind, units := unit(k, calls[k])
		perStep := units / float64(steps)
		cost := perStep * prices[kind]
		total += cost
		fmt.Fprintf(w, "%-40s %10.2f %14.3f\n", k, float64(calls[k])/float64(steps), cost)
	}
	lam := float64(invocations) / float64(steps) * prices["lambda.request"]
	total += lam
	fmt.Fprintf(w, "%-40s %10.2f %14.3f\n", "Lambda invocations (SQS batches)", float64(invocations)/float64(steps), lam)
	sfn := phasesPerStep * prices["stepfunctions"]
	fmt.Fprintf(w, "%-40s %10s %14.3f\n", "TOTAL cairn orchestration", "", total)
	fmt.Fprintf(w, "%-40s %10.2f %14.3f\n", "Step Functions Standard (transitions)", phasesPerStep, sfn)
	fmt.Fprintf(w, "ratio cairn / Step Functions: %.2f (target ≤ 0.10); prices %s\n", total/sfn, PricesDate)
	return total, sfn
}
