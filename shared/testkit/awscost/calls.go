package awscost

import (
	"context"
	"sort"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// CallCounter counts AWS API calls by "Service.Operation" through an SDK
// middleware (one count per logical call; SDK retries are not counted).
// The cost report uses it; it is cheap enough to leave on.
type CallCounter struct {
	// Meter, when set, also prices every DynamoDB call in request units
	// (units.go).
	Meter *Meter

	mu     sync.Mutex
	counts map[string]int64
}

// Instrument adds the counting middleware to cfg.
func (c *CallCounter) Instrument(cfg *aws.Config) {
	cfg.APIOptions = append(cfg.APIOptions, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("cairnCallCounter",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				svc, op := awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx)
				c.add(svc + "." + op)
				if c.Meter == nil || svc != "DynamoDB" {
					return next.HandleInitialize(ctx, in)
				}
				var (
					out  middleware.InitializeOutput
					meta middleware.Metadata
				)
				_, err := c.Meter.measure(ctx, op, in.Parameters, func() (any, error) {
					var err error
					out, meta, err = next.HandleInitialize(ctx, in)
					return out.Result, err
				})
				return out, meta, err
			}), middleware.After)
	})
}

func (c *CallCounter) add(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts == nil {
		c.counts = map[string]int64{}
	}
	c.counts[key]++
}

// Snapshot returns the counts so far.
func (c *CallCounter) Snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

// Reset zeroes the counts (and the Meter's).
func (c *CallCounter) Reset() {
	c.mu.Lock()
	c.counts = nil
	c.mu.Unlock()
	if c.Meter != nil {
		c.Meter.Reset()
	}
}

// Keys returns the counted call names, sorted.
func Keys(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
