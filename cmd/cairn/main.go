// Command cairn is the CLI and local server of the cairn agent runtime.
//
//	cairn dev     --data DIR --addr 127.0.0.1:PORT   serve the API, phase workers and repair
//	cairn run     [--addr URL | --data DIR] "prompt" submit a turn and stream its progress
//	cairn approve [--addr URL | --data DIR] SESSION APPROVAL allow|deny
//	cairn sessions / cairn show SESSION [SUBMISSION]
//	cairn workflow run FILE.star [--input JSON]       run a workflow and show its nodes
//	cairn sandboxd --addr 127.0.0.1:0 --workspace DIR --state DIR   the sandbox control server
//	cairn isolate                                      evaluate one workflow script (stdin → stdout)
//
// `cairn dev --backend aws` serves the same API against AWS services (or
// LocalStack/moto) through the Lambda harness.
//
// It may import shared/assemble, shared/aws/backend, shared/aws/harness,
// shared/aws/lambdafn, shared/contracts, shared/embedded/backend,
// shared/ids, shared/repair, shared/sandbox/server, shared/workflow/isolate, the standard
// library, the AWS SDK, aws-lambda-go's event types and golang.org/x/sys.
// It never imports shared/testkit/... (docs/docs_test.go checks it).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/cairnrun/cairn/shared/sandbox/server"
	"github.com/cairnrun/cairn/shared/workflow/isolate"
)

const usage = `cairn — a durable AI-agent runtime

usage:
  cairn dev      --data DIR --addr 127.0.0.1:PORT [--token T] [--sandbox local|process]
  cairn dev      --backend aws [--endpoint URL] [--table T --bucket B --queue-prefix P] --addr 127.0.0.1:PORT
  cairn run      [--addr URL --token T | --data DIR] [--model scripted:demo] [--session ID] [--sandbox KIND] "prompt"
  cairn approve  [--addr URL --token T | --data DIR] SESSION APPROVAL allow|deny [--reason TEXT]
  cairn sessions [--addr URL --token T | --data DIR]
  cairn show     [--addr URL --token T | --data DIR] SESSION [SUBMISSION]
  cairn workflow run FILE.star [--input JSON] [--key K] [--addr URL --token T | --data DIR]
  cairn sandboxd --addr HOST:PORT --workspace DIR --state DIR [--idle-timeout D]   (needs SANDBOXD_TOKEN_SHA256)

Environment: CAIRN_ADDR, CAIRN_TOKEN, CAIRN_DATA supply the flags' defaults.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	env := envDefaults{Addr: os.Getenv("CAIRN_ADDR"), Token: os.Getenv("CAIRN_TOKEN"), Data: os.Getenv("CAIRN_DATA"), Environ: os.Environ()}
	var err error
	args := os.Args[2:]
	switch os.Args[1] {
	case "dev":
		err = cmdDev(ctx, env, args)
	case "run":
		err = cmdRun(ctx, env, args)
	case "approve":
		err = cmdApprove(ctx, env, args)
	case "sessions":
		err = cmdSessions(ctx, env, args)
	case "show":
		err = cmdShow(ctx, env, args)
	case "workflow":
		err = cmdWorkflow(ctx, env, args)
	case "isolate":
		// Evaluates one workflow script: JSON on stdin and stdout, run by
		// the workflow driver with an empty environment and tight limits.
		os.Exit(isolate.Main(ctx, os.Stdin, os.Stdout, os.Stderr))
	case "sandboxd":
		// The same server as functions/sandboxd: `cairn dev --sandbox
		// process` starts this binary as its sandboxes.
		os.Exit(server.Main(ctx, args, os.Environ(), os.Stdout, os.Stderr))
	case "help", "-h", "--help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "cairn: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if errors.Is(err, flag.ErrHelp) {
		return // -h/--help of a command: its flags were printed
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cairn:", err)
		os.Exit(exitCode(err))
	}
}

// envDefaults is everything main reads from the process environment.
type envDefaults struct {
	Addr, Token, Data string
	Environ           []string
}

// getenv reads the captured environment (model keys, base URLs).
func (e envDefaults) getenv(key string) string { return lookup(e.Environ, key) }
