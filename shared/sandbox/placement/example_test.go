package placement_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/local"
	"github.com/cairnrun/cairn/shared/sandbox/placement"
)

// The token is derived from the record's ref by any process holding the
// key; sandboxd is given only its hash.
func ExampleTokens() {
	tokens := placement.Tokens{Key: []byte("0123456789abcdef0123456789abcdef")}
	token := tokens.Mint("ses_1", "00112233445566778899aabbccddeeff")
	fmt.Println(token == tokens.Mint("ses_1", "00112233445566778899aabbccddeeff"))
	fmt.Println(len(placement.HashHex(token)))
	// Output:
	// true
	// 64
}

// A deployment that serves only local sandboxes refuses a spec asking for
// another kind, naming what it serves.
func ExampleRouter() {
	r := &placement.Router{Default: "local", Kinds: map[string]contracts.SandboxProvider{
		"local": local.NewProvider(os.TempDir(), local.Options{}),
	}}
	_, err := r.Acquire(context.Background(), "ses_1", contracts.SandboxSpec{Kind: "fargate"})
	fmt.Println(errors.Is(err, contracts.ErrInvalid))
	fmt.Println(err)
	// Output:
	// true
	// acquiring sandbox for session ses_1: sandbox kind "fargate" is not served by this deployment (it serves "local" (default)): invalid input
}
