package scripted

import (
	"fmt"
	"strconv"
	"strings"
)

// A sized scenario is the benchmarks' agent step with its sizes in its
// name, "bench-<answer>-<chunk>-<tool>" (bytes), e.g. "bench-4096-80-2048":
// step 0 says a few words and makes one bash call whose output is <tool>
// bytes; step 1 answers with <answer> bytes of words, streamed in chunks of
// about <chunk> bytes (a provider's ~20 tokens are ~80 B). Pacing is the
// scenario's latency after the @ ("bench-4096-80-2048@60ms": one chunk
// every 60 ms, slower than the engine's 50 ms flush, as a real model is).
// The answer and the tool's output begin with the prompt, so two turns
// with different prompts store different bytes (a store that keeps one
// copy of equal content is not flattered by a benchmark repeating itself).
type sizes struct{ answer, chunk, tool int }

// sized parses a sized scenario name; nil if name is not one.
func sized(name string) *sizes {
	rest, ok := strings.CutPrefix(name, "bench-")
	if !ok {
		return nil
	}
	parts := strings.Split(rest, "-")
	if len(parts) != 3 {
		return nil
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 1 || v > 1<<20 {
			return nil
		}
		n[i] = v
	}
	return &sizes{answer: n[0], chunk: n[1], tool: n[2]}
}

func (z *sizes) steps(prompt string) []step {
	lead := prompt + ": "
	return []step{
		{text: "Looking at the workspace.", calls: []call{{"bash", map[string]any{
			"command": fmt.Sprintf("printf '%%s' %s; head -c %d /dev/zero | tr '\\0' x", shellQuote(lead), max(z.tool-len(lead), 0)),
		}}}},
		{text: lead + words(max(z.answer-len(lead), 1))},
	}
}

// shellQuote quotes s as one POSIX shell word.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// words returns n bytes of space-separated words (deterministic).
func words(n int) string {
	const w = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor "
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(w)
	}
	return strings.TrimRight(b.String()[:n-1], " ") + "."
}
