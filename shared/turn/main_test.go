package turn_test

import (
	"os"
	"testing"

	"github.com/cairnrun/cairn/shared/testkit/mcptest"
)

// TestMain lets this test binary be the stdio MCP server sandboxes start
// (mcptest.StdioArg).
func TestMain(m *testing.M) {
	mcptest.ServeStdioIfAsked()
	os.Exit(m.Run())
}
