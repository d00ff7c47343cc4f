package contracts

import "time"

// Role of a transcript node.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// BlockType of a content block.
type BlockType string

const (
	BlockText       BlockType = "text"
	BlockToolUse    BlockType = "tool_use"
	BlockToolResult BlockType = "tool_result"
)

// Block is one piece of a node's content.
type Block struct {
	Type       BlockType   `json:"type"`
	Text       string      `json:"text,omitempty"`
	ToolCall   *ToolCall   `json:"tool_call,omitempty"`
	ToolResult *ToolResult `json:"tool_result,omitempty"`
}

// Node is one append-only transcript entry. IDs are deterministic from
// (submission, step, role) so re-writing a node is harmless.
type Node struct {
	ID           string    `json:"id"`
	Parent       string    `json:"parent,omitempty"`
	SessionID    string    `json:"session_id"`
	SubmissionID string    `json:"submission_id"`
	Role         Role      `json:"role"`
	Blocks       []Block   `json:"blocks"`
	CreatedAt    time.Time `json:"created_at"`
}
