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

// TestAParkedTurnKeepsItsOrchestration: a turn that parks for an approval
// sends no message while it waits; its usage so far, and the deciding or
// cancelling request's, still reach its terminal record — every Lambda
// invocation (each handler run and the three requests) and every
// message's three SQS requests.
func TestAParkedTurnKeepsItsOrchestration(t *testing.T) {
	for _, how := range []string{"approve", "cancel"} {
		t.Run(how, func(t *testing.T) {
			var messages atomic.Int64
			s := newStack(t, 5*time.Second, 5, func(_ string, h func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
				return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
					messages.Add(int64(len(ev.Records)))
					return h(ctx, ev)
				}
			})
			sid, sub := s.submit(contracts.SessionSpec{Model: "scripted:approval", Policy: contracts.Policy{Tools: map[string]contracts.Decision{"bash": contracts.Ask}}})
			var aid string
			for round := 0; aid == ""; round++ {
				if round == 1000 {
					t.Fatal("the turn never parked")
				}
				n := 0
				for _, fn := range s.harness.Functions {
					k, err := s.harness.Once(context.Background(), fn)
					if err != nil {
						t.Fatal(err)
					}
					n += k
				}
				got, err := s.rt.Ports.Journal.GetSubmission(context.Background(), sub)
				if err != nil {
					t.Fatal(err)
				}
				if len(got.Approvals) > 0 {
					aid = got.Approvals[0].ID
				} else if n == 0 && got.Phase.Terminal() {
					t.Fatalf("ended %s without parking", got.Phase)
				}
			}
			path, body, requests := "/v1/sessions/"+sid+"/approvals/"+aid, map[string]string{"decision": "allow"}, int64(2)
			if how == "cancel" {
				path, body = "/v1/sessions/"+sid+"/submissions/"+sub+"/cancel", map[string]string{"reason": "no"}
			}
			if code, out := s.call("POST", path, body, nil); code/100 != 2 {
				t.Fatalf("%s: %d %v", how, code, out)
			}
			got := s.until(sub, 60*time.Second)
			n := messages.Load()
			o := got.Orchestration
			if o == nil {
				t.Fatalf("%s: no orchestration recorded", got.Phase)
			}
			if o.Invocations != n+requests || o.QueueRequests != 3*n {
				t.Errorf("%s: usage %+v for %d messages and %d requests: want %d invocations, %d SQS requests", got.Phase, *o, n, requests, n+requests, 3*n)
			}
		})
	}
}
