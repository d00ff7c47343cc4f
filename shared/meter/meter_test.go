package meter

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/pricing"
)

var prices = pricing.AWS{Date: "d", DynamoWriteUnit: 1, DynamoReadUnit: 0.5, SQSRequest: 10, LambdaRequest: 100, LambdaGBSecond: 1000}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func (c *clock) run(sub string, start contracts.Orchestration) context.Context {
	return Start(context.Background(), Run{Prices: prices, Currency: "USD", Submission: sub, Start: start, MemoryMB: 2048, Now: c.now})
}

// TestUsageTravelsToTheTerminalWrite: an API request starting a turn and
// two handler runs hand their usage on message by message; the terminal
// record gets the sum (with an estimate of its own write), priced.
func TestUsageTravelsToTheTerminalWrite(t *testing.T) {
	clk := &clock{t: time.Unix(0, 0)}
	api := clk.run("", contracts.Orchestration{Invocations: 1})
	Add(api, contracts.Orchestration{DynamoWriteUnits: 2})
	carried := Carry(api, "sub_1") // binds the request to the turn it starts
	if carried == nil || *carried != (contracts.Orchestration{Invocations: 1, DynamoWriteUnits: 2}) {
		t.Fatalf("carried %+v", carried)
	}
	if again := Carry(api, "sub_1"); again != nil {
		t.Fatalf("carried twice: %+v", again)
	}
	Add(api, contracts.Orchestration{DynamoReadUnits: 4})
	if other := Carry(api, "sub_2"); other != nil {
		t.Fatalf("another turn's message carried %+v", other)
	}

	start := *carried
	start.Invocations++
	start.QueueRequests += 3
	model := clk.run("sub_1", start)
	Add(model, contracts.Orchestration{DynamoReadUnits: 1, DynamoWriteUnits: 3})
	clk.t = clk.t.Add(500 * time.Millisecond)
	carried = Carry(model, "sub_1")

	start = *carried
	start.Invocations++
	start.QueueRequests += 3
	commit := clk.run("sub_1", start)
	var other contracts.Submission
	other.ID = "sub_2"
	Fold(commit, &other)
	if other.Orchestration != nil {
		t.Fatalf("folded into another turn's record: %+v", *other.Orchestration)
	}
	var cur contracts.Submission
	cur.ID = "sub_1"
	next := cur
	Fold(commit, &next)
	want := contracts.Orchestration{DynamoWriteUnits: 2 + 3 + 1, DynamoReadUnits: 1, QueueRequests: 6, Invocations: 3, LambdaGBSeconds: 1}
	if *next.Orchestration != want {
		t.Fatalf("terminal record %+v, want %+v", *next.Orchestration, want)
	}
	if got := next.Cost.Orchestration; math.Abs(got-prices.Price(want)) > 1e-9 || next.Cost.AWSPrices != "d" || next.Cost.Currency != "USD" {
		t.Fatalf("cost %+v", *next.Cost)
	}
	if cur.Orchestration != nil {
		t.Fatal("folding changed the record it copied from")
	}
}

// TestUndoGivesTheUsageBack: a terminal write that fails leaves its usage
// to the next try, counted once.
func TestUndoGivesTheUsageBack(t *testing.T) {
	clk := &clock{t: time.Unix(0, 0)}
	ctx := clk.run("s", contracts.Orchestration{Invocations: 1})
	clk.t = clk.t.Add(time.Second)
	a := contracts.Submission{ID: "s"}
	Fold(ctx, &a)()
	clk.t = clk.t.Add(time.Second)
	b := contracts.Submission{ID: "s"}
	Fold(ctx, &b)
	want := contracts.Orchestration{DynamoWriteUnits: 1, Invocations: 1, LambdaGBSeconds: 4}
	if *b.Orchestration != want {
		t.Fatalf("after undo %+v, want %+v", *b.Orchestration, want)
	}
}

// TestNoTallyNoChange: outside a metered run nothing is added or carried.
func TestNoTallyNoChange(t *testing.T) {
	var s contracts.Submission
	Fold(context.Background(), &s)()
	Add(context.Background(), contracts.Orchestration{DynamoWriteUnits: 1})
	if s.Orchestration != nil || s.Cost != nil || Carry(context.Background(), "x") != nil {
		t.Fatalf("%+v %+v", s.Orchestration, s.Cost)
	}
}

// TestConcurrentCarryAndFold: a tally is used from the handler and its
// lease holder's goroutine at once (go test -race).
func TestConcurrentCarryAndFold(t *testing.T) {
	clk := &clock{t: time.Unix(0, 0)}
	ctx := Start(context.Background(), Run{Prices: prices, Currency: "USD", Start: contracts.Orchestration{Invocations: 1}, Now: clk.now})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 100 {
			Add(ctx, contracts.Orchestration{DynamoReadUnits: 1})
			Carry(ctx, "s")
		}
	}()
	for range 100 {
		s := contracts.Submission{ID: "s"}
		Fold(ctx, &s)
	}
	<-done
}
