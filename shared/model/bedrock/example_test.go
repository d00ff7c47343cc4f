package bedrock_test

import (
	"context"
	"fmt"
	"log"

	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/model/bedrock"
)

// On AWS the region and the IAM credentials come from the environment (the
// Lambda's role); no API key is involved. (Not run: it calls Bedrock.)
func ExampleNewFromConfig() {
	ctx := context.Background()
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	m, err := bedrock.NewFromConfig(awsCfg, bedrock.Config{MaxTokens: 4096})
	if err != nil {
		log.Fatal(err)
	}
	req := contracts.ModelRequest{
		Model:    "us.anthropic.claude-3-5-sonnet-20241022-v2:0",
		Messages: []contracts.Node{{Role: contracts.RoleUser, Blocks: []contracts.Block{{Type: contracts.BlockText, Text: "hello"}}}},
	}
	resp, err := m.Stream(ctx, req, func(ev contracts.ModelEvent) error {
		fmt.Print(ev.Text) // text deltas as they arrive
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("\nstop:", resp.StopReason, "usage:", resp.Usage)
}
