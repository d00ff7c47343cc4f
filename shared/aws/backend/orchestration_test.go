package backend_test

import (
	"context"
	"math"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/pricing"
)

// TestATurnCarriesItsOrchestrationCost: on the AWS shape, a turn's record
// carries what its handlers used — one Lambda invocation per phase message
// and for the submitting request, the send, receive and delete of each
// message, DynamoDB request units as the endpoint reported them — priced
// at the dated AWS list prices, and the API shows it.
func TestATurnCarriesItsOrchestrationCost(t *testing.T) {
	var messages atomic.Int64
	s := newStack(t, 5*time.Second, 5, func(_ string, h func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
		return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			messages.Add(int64(len(ev.Records)))
			return h(ctx, ev)
		}
	})
	sid, sub := s.submit(contracts.SessionSpec{Model: "scripted:demo"})
	got := s.until(sub, 60*time.Second)
	if got.Phase != contracts.PhaseCommitted {
		t.Fatalf("%s %s", got.Phase, got.Error)
	}
	o, c := got.Orchestration, got.Cost
	if o == nil || c == nil {
		t.Fatalf("no orchestration usage or cost: %+v %+v", got.Orchestration, got.Cost)
	}
	n := messages.Load()
	if o.Invocations != n+1 || o.QueueRequests != 3*n {
		t.Errorf("usage %+v for %d phase messages and one submitting request: want %d invocations, %d SQS requests", *o, n, n+1, 3*n)
	}
	if o.DynamoWriteUnits < float64(n) || o.DynamoReadUnits <= 0 {
		t.Errorf("DynamoDB units %+v: want at least a write unit per phase and some reads", *o)
	}
	prices := pricing.Default()
	if want := prices.AWS.Price(*o); math.Abs(c.Orchestration-want) > 1e-12 || c.Orchestration <= 0 || c.AWSPrices != prices.AWS.Date {
		t.Errorf("cost %+v, want orchestration %g at the prices of %s", *c, want, prices.AWS.Date)
	}
	if c.Prices != prices.Date || c.Currency != "USD" {
		t.Errorf("cost %+v lost its model part", *c)
	}
	code, view := s.call("GET", "/v1/sessions/"+sid+"/submissions/"+sub, nil, nil)
	cost, _ := view["cost"].(map[string]any)
	if code != http.StatusOK || cost["orchestration"] != c.Orchestration {
		t.Errorf("api view: %d cost %v", code, view["cost"])
	}
	code, usage := s.call("GET", "/v1/usage", nil, nil)
	total, _ := usage["total"].(map[string]any)
	orch, _ := total["orchestration"].(map[string]any)
	if code != http.StatusOK || math.Abs(orch["USD"].(float64)-c.Orchestration) > 1e-12 {
		t.Errorf("usage: %d %v", code, usage["total"])
	}
}
