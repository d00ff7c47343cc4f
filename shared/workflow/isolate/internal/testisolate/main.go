// Command testisolate is the isolate for shared/workflow/isolate's tests: isolate.Main,
// plus misbehaving modes chosen by the first argument so the Runner's
// handling of each can be tested without cmd/cairn.
//
// It may import shared/contracts, shared/workflow/isolate and the standard
// library.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/workflow/isolate"
)

func main() {
	mode := ""
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	switch mode {
	case "": // the real isolate
		os.Exit(isolate.Main(context.Background(), os.Stdin, os.Stdout, os.Stderr))
	case "env": // report the environment it was given
		io.Copy(io.Discard, os.Stdin)
		respond(strings.Join(os.Environ(), "\n"))
	case "hang": // start a grandchild in the group, write its pid to os.Args[2], never answer
		sleep := exec.Command("/bin/sleep", "1000")
		if err := sleep.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.WriteFile(os.Args[2], []byte(fmt.Sprint(sleep.Process.Pid)), 0o644)
		sleep.Wait() // until the group is killed
	case "lambda": // the Lambda handler on one request, with a deadline of os.Args[2]
		lambdaMode(os.Args[2])
	case "garbage":
		fmt.Print("this is not JSON")
	case "flood": // more output than any cap
		io.Copy(io.Discard, os.Stdin)
		os.Stdout.Write([]byte(strings.Repeat("x", 64<<20)))
	case "exit3":
		fmt.Fprintln(os.Stderr, "something broke")
		os.Exit(3)
	default:
		fmt.Fprintln(os.Stderr, "unknown mode", mode)
		os.Exit(2)
	}
}

func respond(s string) {
	v, _ := json.Marshal(s)
	json.NewEncoder(os.Stdout).Encode(contracts.EvalResponse{Status: contracts.EvalDone, Value: v})
}

func lambdaMode(deadline string) {
	var req contracts.EvalRequest
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	d, _ := time.ParseDuration(deadline)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	h := &isolate.LambdaHandler{Limits: isolate.Limits{MemoryMiB: 128}, ClearEnv: true}
	resp, err := h.Handle(ctx, req)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if env := os.Environ(); len(env) > 0 {
		resp = contracts.EvalResponse{Status: contracts.EvalFailed, Error: "environment not cleared: " + strings.Join(env, " ")}
	}
	json.NewEncoder(os.Stdout).Encode(resp)
}
