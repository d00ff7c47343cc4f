package telemetry

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// emfSchema compiles testdata/emf.schema.json, the documented structure.
func emfSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("testdata/emf.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("emf.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("emf.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkEMF validates one line as an EMF document: the schema, then the
// spec's rules on target members, which a schema cannot say (every
// dimension a directive names is a string member of the root, every metric
// a number or an array of at most 100 numbers). It returns the document.
func checkEMF(t *testing.T, schema *jsonschema.Schema, line []byte) map[string]any {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
	if err != nil {
		t.Fatalf("not JSON: %v: %s", err, line)
	}
	if err := schema.Validate(inst); err != nil {
		t.Fatalf("not EMF: %v: %s", err, line)
	}
	var doc map[string]any
	if err := json.Unmarshal(line, &doc); err != nil {
		t.Fatal(err)
	}
	for _, d := range doc["_aws"].(map[string]any)["CloudWatchMetrics"].([]any) {
		dir := d.(map[string]any)
		for _, set := range dir["Dimensions"].([]any) {
			for _, name := range set.([]any) {
				v, ok := doc[name.(string)].(string)
				if !ok {
					t.Errorf("dimension %q is not a string member of the root: %s", name, line)
				}
				// CloudWatch's rule for a dimension value: 1-1024
				// printable ASCII characters, not only spaces.
				if len(v) == 0 || len(v) > 1024 || strings.TrimSpace(v) == "" || strings.IndexFunc(v, func(r rune) bool { return r < 0x20 || r > 0x7e }) >= 0 {
					t.Errorf("dimension %q = %q is not a CloudWatch dimension value: %s", name, v, line)
				}
			}
		}
		for _, m := range dir["Metrics"].([]any) {
			name := m.(map[string]any)["Name"].(string)
			switch v := doc[name].(type) {
			case float64:
			case []any:
				if len(v) > 100 {
					t.Errorf("metric %q has %d values (at most 100)", name, len(v))
				}
			default:
				t.Errorf("metric %q is not a number member of the root (%T): %s", name, doc[name], line)
			}
		}
	}
	return doc
}

func TestTheSchemaRejectsWhatTheSpecForbids(t *testing.T) {
	schema := emfSchema(t)
	for name, bad := range map[string]string{
		"no _aws":          `{"x":1}`,
		"no timestamp":     `{"_aws":{"CloudWatchMetrics":[{"Namespace":"cairn","Dimensions":[[]],"Metrics":[{"Name":"x"}]}]},"x":1}`,
		"unknown unit":     `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"cairn","Dimensions":[[]],"Metrics":[{"Name":"x","Unit":"Parsecs"}]}]},"x":1}`,
		"31 dimensions":    `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"cairn","Dimensions":[["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q","r","s","t","u","v","w","x","y","z","aa","ab","ac","ad","ae"]],"Metrics":[{"Name":"x"}]}]},"x":1}`,
		"extra member":     `{"_aws":{"Timestamp":1,"Extra":true,"CloudWatchMetrics":[{"Namespace":"cairn","Dimensions":[[]],"Metrics":[{"Name":"x"}]}]},"x":1}`,
		"empty namespace":  `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"","Dimensions":[[]],"Metrics":[{"Name":"x"}]}]},"x":1}`,
		"string timestamp": `{"_aws":{"Timestamp":"now","CloudWatchMetrics":[{"Namespace":"cairn","Dimensions":[[]],"Metrics":[{"Name":"x"}]}]},"x":1}`,
	} {
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(bad))
		if err != nil {
			t.Fatal(err)
		}
		if schema.Validate(inst) == nil {
			t.Errorf("%s: the schema accepted %s", name, bad)
		}
	}
}

// TestEveryInstrumentWritesEMF records each instrument once with EMF on and
// checks every line: valid EMF, namespace cairn, the metric's name, unit
// and value, both dimension sets, the dimension values and the trace id.
func TestEveryInstrumentWritesEMF(t *testing.T) {
	schema := emfSchema(t)
	var out bytes.Buffer
	EMF(&out)
	t.Cleanup(func() { EMF(nil) })
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("test").Start(WithFunction(context.Background(), "model"), "x")
	defer span.End()
	for i, in := range Instruments {
		dims := make([]string, len(in.Dims))
		for j, d := range in.Dims {
			dims[j] = d + "-value"
		}
		in.Record(ctx, float64(i)+0.5, dims...)
	}
	sc := bufio.NewScanner(&out)
	var n int
	for sc.Scan() {
		in := Instruments[n]
		doc := checkEMF(t, schema, sc.Bytes())
		n++
		dir := doc["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)
		if dir["Namespace"] != Namespace {
			t.Errorf("%s: namespace %v", in.Name, dir["Namespace"])
		}
		m := dir["Metrics"].([]any)[0].(map[string]any)
		if m["Name"] != in.Name || m["Unit"] != in.Unit {
			t.Errorf("%s: metric %v", in.Name, m)
		}
		if doc[in.Name] != float64(n-1)+0.5 {
			t.Errorf("%s: value %v", in.Name, doc[in.Name])
		}
		sets := dir["Dimensions"].([]any)
		want := append([]string{"function"}, in.Dims...)
		if len(sets) != 2 || !slices.Equal(strs(sets[0]), want) || !slices.Equal(strs(sets[1]), []string{"function"}) {
			t.Errorf("%s: dimension sets %v, want [%v [function]]", in.Name, sets, want)
		}
		if doc["function"] != "model" {
			t.Errorf("%s: function %v", in.Name, doc["function"])
		}
		for _, d := range in.Dims {
			if doc[d] != d+"-value" {
				t.Errorf("%s: dimension %s = %v", in.Name, d, doc[d])
			}
		}
		if doc["traceId"] != span.SpanContext().TraceID().String() {
			t.Errorf("%s: traceId %v", in.Name, doc["traceId"])
		}
	}
	if n != len(Instruments) {
		t.Fatalf("%d lines for %d instruments", n, len(Instruments))
	}
}

func strs(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

// TestDimensionValuesAreBounded: an empty, missing or overlong value still
// makes a valid line (CloudWatch drops a line with an empty dimension).
func TestDimensionValuesAreBounded(t *testing.T) {
	schema := emfSchema(t)
	var out bytes.Buffer
	EMF(&out)
	t.Cleanup(func() { EMF(nil) })
	ToolDuration.Record(context.Background(), 3, "", "ok")
	ModelTokens.Record(context.Background(), 7, strings.Repeat("p", 5000))
	ToolFailures.Record(context.Background(), 1, strings.Repeat("a", MaxDimLength-1)+"é工具\x00\n")
	sc := bufio.NewScanner(&out)
	var docs []map[string]any
	for sc.Scan() {
		docs = append(docs, checkEMF(t, schema, sc.Bytes()))
	}
	if len(docs) != 3 {
		t.Fatalf("%d lines", len(docs))
	}
	if v := docs[2]["tool"].(string); v != strings.Repeat("a", MaxDimLength-1)+"_" {
		t.Errorf("non-ASCII value cut to %q", v)
	}
	if docs[0]["tool"] != "none" || docs[0]["function"] != "cairn" {
		t.Errorf("empty tool: %v", docs[0])
	}
	if p := docs[1]["provider"].(string); len(p) != MaxDimLength || docs[1]["model"] != "none" || docs[1]["direction"] != "none" {
		t.Errorf("bounded dims: provider %d bytes, model %v, direction %v", len(p), docs[1]["model"], docs[1]["direction"])
	}
}

// TestNoEMFUnlessAsked: without EMF, recording writes nothing anywhere.
func TestNoEMFUnlessAsked(t *testing.T) {
	EMF(nil)
	if sink.Load() != nil {
		t.Fatal("a sink is installed")
	}
	Turns.Record(context.Background(), 1, "committed", "none") // must not panic
}
