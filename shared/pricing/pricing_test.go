package pricing_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/pricing"
)

func TestDefaultTable(t *testing.T) {
	tb := pricing.Default()
	if tb.Date == "" || tb.Currency != "USD" || len(tb.Models) < 5 {
		t.Fatalf("table %+v", tb)
	}
	for k, p := range tb.Models {
		if p.InputPerMTok < 0 || p.OutputPerMTok < 0 || !strings.Contains(k, ":") {
			t.Errorf("entry %s %+v", k, p)
		}
	}
}

// Exact entries first, then the longest matching pattern; the estimate is
// exact to the cent (and to the millionth).
func TestCost(t *testing.T) {
	tb := pricing.Table{Date: "d", Currency: "USD", Models: map[string]pricing.Price{
		"p:*":         {InputPerMTok: 100, OutputPerMTok: 100},
		"p:big*":      {InputPerMTok: 3, OutputPerMTok: 15},
		"p:big-exact": {InputPerMTok: 1, OutputPerMTok: 1},
	}}
	for _, c := range []struct {
		model string
		u     contracts.Usage
		want  float64
	}{
		{"p:big-4", contracts.Usage{InputTokens: 1_000_000, OutputTokens: 200_000}, 6},
		{"p:big-exact", contracts.Usage{InputTokens: 500_000, OutputTokens: 500_000}, 1},
		{"p:small", contracts.Usage{InputTokens: 12_345, OutputTokens: 0}, 1.2345},
		{"p:big-4", contracts.Usage{InputTokens: 1, OutputTokens: 1}, 0.000018},
	} {
		got := tb.Cost(c.model, c.u)
		if got == nil || got.Model != c.want || got.Currency != "USD" || got.Prices != "d" {
			t.Errorf("%s %+v: %+v, want %v", c.model, c.u, got, c.want)
		}
	}
	if got := tb.Cost("q:other", contracts.Usage{InputTokens: 5}); got != nil {
		t.Errorf("a model without a price: %+v, want none", got)
	}
}

func TestFromEnv(t *testing.T) {
	f := filepath.Join(t.TempDir(), "prices.json")
	if err := os.WriteFile(f, []byte(`{"date":"2027-01-01","models":{"anthropic:claude-sonnet-4*":{"input_per_mtok":2,"output_per_mtok":10},"mine:m":{"input_per_mtok":1,"output_per_mtok":1}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tb, err := pricing.FromEnv(func(k string) string { return map[string]string{pricing.EnvPrices: f}[k] })
	if err != nil {
		t.Fatal(err)
	}
	if c := tb.Cost("anthropic:claude-sonnet-4-5", contracts.Usage{InputTokens: 1_000_000}); c == nil || c.Model != 2 || c.Prices != "2027-01-01" {
		t.Fatalf("overridden: %+v", c)
	}
	if c := tb.Cost("openai:gpt-5", contracts.Usage{InputTokens: 1_000_000}); c == nil || c.Model != pricing.Default().Models["openai:gpt-5"].InputPerMTok {
		t.Fatalf("kept: %+v", c)
	}
	for _, bad := range []string{`{"models":{"x:y":{"input_per_mtok":-1}}}`, `not json`} {
		if err := os.WriteFile(f, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := pricing.FromEnv(func(string) string { return f }); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
	if _, err := pricing.FromEnv(func(string) string { return "/no/such/file" }); err == nil {
		t.Error("a missing file: accepted")
	}
}
