package pricing

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path"
	"strings"

	"github.com/cairnrun/cairn/shared/contracts"
)

//go:embed prices.json
var defaultTable []byte

// EnvPrices names a JSON file of the same shape as prices.json whose
// entries replace (or add to) the repository's; its date, when set, is
// the table's.
const EnvPrices = "CAIRN_PRICES"

// Price is one model's list price per million tokens.
type Price struct {
	InputPerMTok  float64 `json:"input_per_mtok"`
	OutputPerMTok float64 `json:"output_per_mtok"`
}

// Table is a dated price list by model ("provider:model", or a pattern
// with * matching any run of characters).
type Table struct {
	Date     string           `json:"date"`
	Currency string           `json:"currency"`
	Models   map[string]Price `json:"models"`
	AWS      AWS              `json:"aws"`
}

// AWS is the dated list prices of what the AWS backend's orchestration
// uses, per unit in the table's currency.
type AWS struct {
	Date            string  `json:"date"`
	Region          string  `json:"region"`
	DynamoWriteUnit float64 `json:"dynamodb_write_unit"`
	DynamoReadUnit  float64 `json:"dynamodb_read_unit"`
	SQSRequest      float64 `json:"sqs_fifo_request"`
	S3Put           float64 `json:"s3_put"`
	S3Get           float64 `json:"s3_get"`
	LambdaRequest   float64 `json:"lambda_request"`
	LambdaGBSecond  float64 `json:"lambda_gb_second"`
}

// Price is o at these prices.
func (a AWS) Price(o contracts.Orchestration) float64 {
	return o.DynamoWriteUnits*a.DynamoWriteUnit + o.DynamoReadUnits*a.DynamoReadUnit + float64(o.QueueRequests)*a.SQSRequest +
		float64(o.BlobPuts)*a.S3Put + float64(o.BlobGets)*a.S3Get + float64(o.Invocations)*a.LambdaRequest + o.LambdaGBSeconds*a.LambdaGBSecond
}

func (a AWS) valid() bool {
	for _, v := range []float64{a.DynamoWriteUnit, a.DynamoReadUnit, a.SQSRequest, a.S3Put, a.S3Get, a.LambdaRequest, a.LambdaGBSecond} {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// Default is the repository's table.
func Default() Table {
	var t Table
	if err := json.Unmarshal(defaultTable, &t); err != nil {
		panic("pricing: prices.json: " + err.Error()) // embedded: a test reads it
	}
	return t
}

// FromEnv is Default with the entries of the file EnvPrices names over it
// (none set: Default).
func FromEnv(getenv func(string) string) (Table, error) {
	t := Default()
	p := getenv(EnvPrices)
	if p == "" {
		return t, nil
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return t, fmt.Errorf("%s: %w", EnvPrices, err)
	}
	var over Table
	if err := json.Unmarshal(b, &over); err != nil {
		return t, fmt.Errorf("%s %s: not a price table: %w", EnvPrices, p, err)
	}
	for k, v := range over.Models {
		if v.InputPerMTok < 0 || v.OutputPerMTok < 0 || math.IsNaN(v.InputPerMTok+v.OutputPerMTok) || math.IsInf(v.InputPerMTok+v.OutputPerMTok, 0) {
			return t, fmt.Errorf("%s %s: %s: prices must be finite and non-negative", EnvPrices, p, k)
		}
		t.Models[k] = v
	}
	if over.Date != "" {
		t.Date = over.Date
	}
	if over.AWS != (AWS{}) { // AWS prices are replaced whole, with their date
		if !over.AWS.valid() || over.AWS.Date == "" {
			return t, fmt.Errorf("%s %s: aws: prices must be finite and non-negative, with a date", EnvPrices, p)
		}
		t.AWS = over.AWS
	}
	return t, nil
}

// Lookup finds model's price: an exact entry, else the longest matching
// pattern.
func (t Table) Lookup(model string) (Price, bool) {
	k, ok := t.Match(model)
	return t.Models[k], ok
}

// Match is the table's entry for model: model itself, else the longest
// pattern matching it (ok false: none). The entries are a bounded set of
// names, fit for a metric dimension where model names are not.
func (t Table) Match(model string) (entry string, ok bool) {
	if _, ok := t.Models[model]; ok {
		return model, true
	}
	best := ""
	for k := range t.Models {
		if !strings.Contains(k, "*") {
			continue
		}
		if ok, _ := path.Match(k, model); ok && (len(k) > len(best) || len(k) == len(best) && k < best) {
			best = k
		}
	}
	return best, best != ""
}

// Cost is the estimate of usage on model (nil: the table has no price
// for it). Amounts are rounded to a millionth of the currency unit.
func (t Table) Cost(model string, u contracts.Usage) *contracts.Cost {
	entry, ok := t.Match(model)
	if !ok {
		return nil
	}
	return t.CostOf(entry, u)
}

// CostOf is Cost at the table's entry (Match's), nil if it has none.
func (t Table) CostOf(entry string, u contracts.Usage) *contracts.Cost {
	p, ok := t.Models[entry]
	if !ok {
		return nil
	}
	amount := (float64(u.InputTokens)*p.InputPerMTok + float64(u.OutputTokens)*p.OutputPerMTok) / 1e6
	return &contracts.Cost{Currency: t.Currency, Model: math.Round(amount*1e6) / 1e6, Prices: t.Date}
}
