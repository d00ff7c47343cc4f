package sqlite

import (
	segjson "github.com/segmentio/encoding/json"
)

// jsonc is the codec of the store's hot records — sessions, submissions,
// nodes, events, queue messages, stream chunks and completions, tool
// results: github.com/segmentio/encoding/json, which reads and writes what
// encoding/json does (TestCodecIsEncodingJSON) at a quarter of its cost
// (JSON was a tenth of a turn's CPU). One difference, harmless to a read:
// it writes a field tagged omitzero when it is zero (as omitempty would
// not omit it either), where encoding/json leaves it out. Workflow records
// (workflow*.go, off the hot path, their results any values) keep
// encoding/json.
var jsonc = struct {
	Marshal   func(any) ([]byte, error)
	Unmarshal func([]byte, any) error
}{segjson.Marshal, segjson.Unmarshal}
