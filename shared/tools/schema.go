package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/cairnrun/cairn/shared/contracts"
)

// compileSchemas compiles every definition's input schema (JSON Schema
// draft 2020-12) once.
func compileSchemas(defs []contracts.ToolDef) (map[string]*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	out := make(map[string]*jsonschema.Schema, len(defs))
	for _, d := range defs {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(d.InputSchema))
		if err != nil {
			return nil, fmt.Errorf("parsing the input schema of tool %s: %w", d.Name, err)
		}
		url := "https://cairn.run/schemas/tools/" + d.Name + ".json"
		if err := c.AddResource(url, doc); err != nil {
			return nil, fmt.Errorf("adding the input schema of tool %s: %w", d.Name, err)
		}
		sch, err := c.Compile(url)
		if err != nil {
			return nil, fmt.Errorf("compiling the input schema of tool %s: %w", d.Name, err)
		}
		out[d.Name] = sch
	}
	return out, nil
}

// validate parses input and checks it against sch. The returned message is
// for the model: it names each violation and where it is.
func validate(sch *jsonschema.Schema, input json.RawMessage) (string, bool) {
	if len(bytes.TrimSpace(input)) == 0 {
		input = json.RawMessage("{}")
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(input))
	if err != nil {
		return "malformed JSON: " + err.Error(), false
	}
	err = sch.Validate(v)
	if err == nil {
		return "", true
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error(), false
	}
	var msgs []string
	for _, u := range ve.BasicOutput().Errors {
		if u.Error == nil {
			continue
		}
		loc := "input"
		if u.InstanceLocation != "" {
			loc = strings.TrimPrefix(u.InstanceLocation, "/")
		}
		msgs = append(msgs, loc+": "+u.Error.String())
	}
	if len(msgs) == 0 {
		return "does not match the schema", false
	}
	return strings.Join(msgs, "; "), false
}
