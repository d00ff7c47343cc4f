package scripted

import (
	"bytes"
	"encoding/json"
)

type call struct {
	name  string
	input map[string]any
}

type step struct {
	text  string // "{prompt}" is replaced by the user's prompt
	calls []call
}

// scenarios maps a name to its steps; past the last step the last one repeats.
var scenarios = map[string][]step{
	"plain": {{text: "Hello from cairn's scripted model. You said: {prompt}"}},
	"demo": {
		{text: "I'll write a note in the sandbox.", calls: []call{
			{"write_file", map[string]any{"path": "notes.txt", "content": "cairn was here\nsecond line\n"}},
		}},
		{text: "Now I'll list the workspace and read the note back.", calls: []call{
			{"list_dir", map[string]any{"path": "."}},
			{"read_file", map[string]any{"path": "notes.txt"}},
		}},
		{text: "And count its lines with a command.", calls: []call{
			{"bash", map[string]any{"command": "wc -l < notes.txt"}},
		}},
		{text: "Done: I wrote notes.txt, listed the workspace, read the note back and counted its 2 lines."},
	},
	"multi": {
		{text: "Several things at once.", calls: []call{
			{"write_file", map[string]any{"path": "a.txt", "content": "alpha\n"}},
			{"glob", map[string]any{"pattern": "*.txt"}},
			{"bash", map[string]any{"command": "echo ran >> log.txt"}},
			{"grep", map[string]any{"pattern": "alpha"}},
		}},
		{text: "All four calls finished."},
	},
	"approval": {
		{text: "This needs your approval.", calls: []call{
			{"bash", map[string]any{"command": "echo approved >> approved.txt"}},
		}},
		{text: "Finished after the approval decision."},
	},
	"shell": {
		{text: "Running your prompt as a command.", calls: []call{{"bash", map[string]any{"command": "{prompt}"}}}},
		{text: "The command finished."},
	},
	"workflow": {
		{text: "I'll fan this out to three sub-agents with a workflow.", calls: []call{{"run_workflow", map[string]any{
			"script": "def main(input):\n    rs = wait([start(\"part \" + p, model=\"scripted:plain\", key=p) for p in input[\"parts\"]])\n    return [r.output for r in rs]\n",
			"input":  map[string]any{"parts": []any{"a", "b", "c"}},
		}}}},
		{text: "The workflow finished; its sub-agents answered."},
	},
	"bench": {
		{text: "Looking.", calls: []call{{"list_dir", map[string]any{"path": "."}}}},
		{text: "Done."},
	},
	"loop": {
		{text: "Looking again.", calls: []call{{"list_dir", map[string]any{"path": "."}}}},
	},
	// "call": the prompt is "<tool> <JSON input>": one call of that tool
	// (an MCP tool's, say), then an answer.
	"call": {
		{text: "Calling the tool you named.", calls: []call{{"{tool}", nil}}},
		{text: "The call finished."},
	},
	"kill": {
		{text: "Appending a line, then a slow check.", calls: []call{
			{"python", map[string]any{"code": "open('out.txt', 'a').write('line\\n')"}},
			{"bash", map[string]any{"command": "sleep 2; echo slow done"}},
		}},
		{text: "The line is appended and the slow check finished. This answer streams in several chunks so a crash can land in the middle of it."},
	},
}

func mustJSON(v any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // static scenario data; cannot fail
	}
	return bytes.TrimSpace(buf.Bytes())
}
