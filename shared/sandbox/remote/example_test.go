package remote_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/remote"
	"github.com/cairnrun/cairn/shared/sandbox/server"
)

func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "workspace")
	defer os.RemoveAll(dir)

	// sandboxd is given only the SHA-256 of the token.
	const token = "per-sandbox-secret"
	sum := sha256.Sum256([]byte(token))
	srv, err := server.New(server.Config{Workspace: dir, TokenSHA256: hex.EncodeToString(sum[:])})
	if err != nil {
		panic(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	sb, err := remote.New(ts.URL, token, remote.Options{})
	if err != nil {
		panic(err)
	}
	defer sb.Close()
	if err := sb.Health(ctx); err != nil {
		panic(err)
	}
	_ = sb.WriteFile(ctx, contracts.WriteFileRequest{Path: "notes.txt", Content: "one\ntwo\n", CallID: "call-1"})
	res, _ := sb.Exec(ctx, contracts.ExecRequest{Command: "wc -l < notes.txt"})
	fmt.Print(res.Stdout)
	_, err = sb.ReadFile(ctx, contracts.ReadFileRequest{Path: "../etc/passwd"})
	fmt.Println(errors.Is(err, contracts.ErrPermission))
	// Output:
	// 2
	// true
}
