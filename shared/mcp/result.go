package mcp

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnrun/cairn/shared/contracts"
)

// result maps an MCP call result to the tool result the model sees: text
// blocks as they are, other content as a one-line reference (an image or
// audio by type and size, a resource by URI — its text when embedded),
// structured content as JSON after them, and isError as IsError. The
// toolset caps it like every output.
func result(r *sdk.CallToolResult) contracts.ToolResult {
	var parts []string
	for _, c := range r.Content {
		switch v := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, v.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image: %s, %d bytes]", v.MIMEType, len(v.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio: %s, %d bytes]", v.MIMEType, len(v.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link: %s %s]", v.Name, v.URI))
		case *sdk.EmbeddedResource:
			if v.Resource == nil {
				continue
			}
			if v.Resource.Text != "" {
				parts = append(parts, fmt.Sprintf("[resource %s]\n%s", v.Resource.URI, v.Resource.Text))
			} else {
				parts = append(parts, fmt.Sprintf("[resource %s: %s, %d bytes]", v.Resource.URI, v.Resource.MIMEType, len(v.Resource.Blob)))
			}
		default:
			parts = append(parts, fmt.Sprintf("[%T content]", c))
		}
	}
	if r.StructuredContent != nil {
		if b, err := json.Marshal(r.StructuredContent); err == nil {
			parts = append(parts, "structured content: "+string(b))
		}
	}
	return contracts.ToolResult{Content: strings.Join(parts, "\n"), IsError: r.IsError}
}
