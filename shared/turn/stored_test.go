package turn

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/embedded/sqlite"
)

// roundTrip is what storedNode must equal, besides what the store reads
// back: n written and read back as encoding/json does.
func roundTrip(t *testing.T, n contracts.Node) (contracts.Node, bool) {
	t.Helper()
	body, err := json.Marshal(n)
	if err != nil {
		return contracts.Node{}, false
	}
	var out contracts.Node
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("reading back %s: %v", body, err)
	}
	return out, true
}

func TestStoredNodeIsTheJSONRoundTrip(t *testing.T) {
	utc := time.Date(2026, 11, 29, 12, 0, 0, 123456789, time.UTC)
	paris := time.FixedZone("CET", 3600)
	base := func() contracts.Node {
		return contracts.Node{ID: "nd_1", Parent: "nd_0", SessionID: "ses_1", SubmissionID: "sub_1", Role: contracts.RoleAssistant, CreatedAt: utc}
	}
	call := func(in string) contracts.Block {
		return contracts.Block{Type: contracts.BlockToolUse, ToolCall: &contracts.ToolCall{ID: "c1", Name: "list_dir", Input: json.RawMessage(in),
			EffectID: "eff", SessionID: "ses_1", SubmissionID: "sub_1", Step: 3}}
	}
	result := func(content string, isErr bool) contracts.Block {
		return contracts.Block{Type: contracts.BlockToolResult, ToolResult: &contracts.ToolResult{CallID: "c1", Content: content, IsError: isErr}}
	}
	text := func(s string) contracts.Block { return contracts.Block{Type: contracts.BlockText, Text: s} }
	_, localOffset := time.Now().Zone()
	cases := map[string]struct {
		mutate func(*contracts.Node)
		direct bool // built (the common forms must be), else not cached
	}{
		"text":               {func(n *contracts.Node) { n.Blocks = []contracts.Block{text("Looking.")} }, true},
		"tool call":          {func(n *contracts.Node) { n.Blocks = []contracts.Block{text("x"), call(`{"path":"."}`)} }, true},
		"tool call, spaced":  {func(n *contracts.Node) { n.Blocks = []contracts.Block{call("{ \"path\" :\n \".\" , \"n\": [1, 2] }")} }, true},
		"tool call, html":    {func(n *contracts.Node) { n.Blocks = []contracts.Block{call(`{"cmd":"a < b && c > d \u2028 \u2029"}`)} }, true},
		"tool call, escapes": {func(n *contracts.Node) { n.Blocks = []contracts.Block{call(`{"s":"\u003c\"\\\/\ud83d\ude00"}`)} }, true},
		"tool result": {func(n *contracts.Node) {
			n.Blocks = []contracts.Block{result("a.txt\nsub/\n<&>", false), result("", true)}
		}, true},
		"no blocks":             {func(n *contracts.Node) { n.Blocks = nil }, true},
		"empty blocks":          {func(n *contracts.Node) { n.Blocks = []contracts.Block{} }, true},
		"no parent":             {func(n *contracts.Node) { n.Parent = ""; n.Blocks = []contracts.Block{text("go")} }, true},
		"monotonic time":        {func(n *contracts.Node) { n.CreatedAt = time.Now().UTC() }, true},
		"zero time":             {func(n *contracts.Node) { n.CreatedAt = time.Time{} }, true},
		"offset zero elsewhere": {func(n *contracts.Node) { n.CreatedAt = utc.In(time.FixedZone("GMT", 0)) }, true},
		"other offset":          {func(n *contracts.Node) { n.CreatedAt = utc.In(paris) }, false},
		"local time":            {func(n *contracts.Node) { n.CreatedAt = time.Now() }, localOffset == 0},
		"year 10000":            {func(n *contracts.Node) { n.CreatedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }, false},
		"invalid utf-8 text":    {func(n *contracts.Node) { n.Blocks = []contracts.Block{text("a\xffb\xc3")} }, false},
		"invalid utf-8 output":  {func(n *contracts.Node) { n.Blocks = []contracts.Block{result("bin\x80\x81", false)} }, false},
		"invalid utf-8 id":      {func(n *contracts.Node) { n.ID = "nd_\xfe" }, false},
		"invalid utf-8 input":   {func(n *contracts.Node) { n.Blocks = []contracts.Block{call("{\"a\":\"\xff\"}")} }, false},
		"nil input":             {func(n *contracts.Node) { n.Blocks = []contracts.Block{call("")} }, false},
		"invalid input":         {func(n *contracts.Node) { n.Blocks = []contracts.Block{call(`{"a":`)} }, false},
		"null input":            {func(n *contracts.Node) { n.Blocks = []contracts.Block{call(`null`)} }, true},
	}
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "cairn.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	i := 0
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			n := base()
			c.mutate(&n)
			if n.ID == base().ID {
				i++
				n.ID = fmt.Sprintf("nd_%d", i)
			}
			got, ok := storedNode(n)
			if ok != c.direct {
				t.Fatalf("storedNode ok = %v, want %v", ok, c.direct)
			}
			if !ok {
				return // not cached: the next step reads it
			}
			want, wantOK := roundTrip(t, n)
			if !wantOK || !reflect.DeepEqual(got, want) {
				t.Errorf("storedNode:\n%#v\nthe JSON round trip (%v):\n%#v", got, wantOK, want)
			}
			// What a read of the store returns is what the cache must
			// hold: the store's own codec, not only encoding/json's.
			if _, err := store.CreateNode(t.Context(), n); err != nil {
				t.Fatal(err)
			}
			read, err := store.GetNode(t.Context(), n.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, read) {
				t.Errorf("storedNode:\n%#v\nthe store reads back:\n%#v", got, read)
			}
		})
	}
}

// The form handed out shares nothing with the node written: a caller
// changing what it wrote does not change the cache.
func TestStoredNodeSharesNothing(t *testing.T) {
	n := contracts.Node{ID: "nd_1", SessionID: "s", Blocks: []contracts.Block{
		{Type: contracts.BlockToolUse, ToolCall: &contracts.ToolCall{ID: "c", Name: "x", Input: json.RawMessage(`{"a":1}`)}},
		{Type: contracts.BlockToolResult, ToolResult: &contracts.ToolResult{CallID: "c", Content: "out"}},
	}}
	got, ok := storedNode(n)
	if !ok {
		t.Fatal("not built")
	}
	n.Blocks[0].ToolCall.Input[5] = '2'
	n.Blocks[0].ToolCall.Name = "y"
	n.Blocks[1].ToolResult.Content = "changed"
	n.Blocks[0] = contracts.Block{Type: contracts.BlockText, Text: "replaced"}
	if string(got.Blocks[0].ToolCall.Input) != `{"a":1}` || got.Blocks[0].ToolCall.Name != "x" || got.Blocks[1].ToolResult.Content != "out" {
		t.Errorf("the stored form changed with the node: %+v %+v", got.Blocks[0].ToolCall, got.Blocks[1].ToolResult)
	}
}
