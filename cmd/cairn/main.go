// Command cairn is the CLI and local server of the cairn agent runtime.
//
//	cairn dev     --data DIR --addr 127.0.0.1:PORT   serve the API, phase workers and repair
//	cairn run     [--addr URL | --data DIR] "prompt" submit a turn and stream its progress
//	cairn approve [--addr URL | --data DIR] SESSION APPROVAL allow|deny
//	cairn sessions / cairn show SESSION [SUBMISSION]
//	cairn workflow run FILE.star [--input JSON]       run a workflow and show its nodes
//	cairn schedule create|list|get|pause|resume|delete   manage a workflow's schedules
//	cairn token add NAME [--operator] | list | revoke NAME   the data directory's token principals
//	cairn mcp     [--addr URL | --data DIR]            serve cairn as an MCP server on stdin/stdout
//	cairn console --api URL [--token T]                a remote API's web console on loopback, signed
//	cairn sandboxd --addr 127.0.0.1:0 --workspace DIR --state DIR   the sandbox control server
//	cairn isolate                                      evaluate one workflow script (stdin → stdout)
//
// `cairn dev --backend aws` serves the same API against AWS services (or
// LocalStack/moto) through the Lambda harness.
//
// It may import shared/assemble, shared/aws/backend, shared/aws/backend/all, shared/aws/harness,
// shared/aws/lambdafn, shared/auth, shared/contracts, shared/embedded/backend,
// shared/ids, shared/mcp/serve, shared/repair, shared/telemetry, shared/sandbox/server, shared/workflow/isolate, the standard
// library, the AWS SDK, aws-lambda-go's event types, the MCP Go SDK and golang.org/x/sys.
// It never imports shared/testkit/... (docs/docs_test.go checks it).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/cairnrun/cairn/shared/sandbox/server"
	"github.com/cairnrun/cairn/shared/workflow/isolate"
)

const usage = `cairn — a durable AI-agent runtime

usage:
  cairn dev      --data DIR --addr 127.0.0.1:PORT [--token T] [--sandbox local|process]
  cairn dev      --backend aws [--endpoint URL] [--table T --bucket B --queue-prefix P] --addr 127.0.0.1:PORT
  cairn run      [--addr URL --token T | --data DIR] [--model scripted:demo] [--session ID [--from NODE]] [--sandbox KIND] "prompt"
                 (Ctrl-C cancels the turn; a second Ctrl-C detaches)
  cairn approve  [--addr URL --token T | --data DIR] SESSION APPROVAL allow|deny [--reason TEXT]
  cairn cancel   [--addr URL --token T | --data DIR] SESSION SUBMISSION [--reason TEXT]
  cairn retry    [--addr URL --token T | --data DIR] SESSION SUBMISSION [--max-steps N] [--max-tokens N] [--max-wall-seconds N]
  cairn sessions [--addr URL --token T | --data DIR]
  cairn show     [--addr URL --token T | --data DIR] SESSION [SUBMISSION]
  cairn workflow run FILE.star [--input JSON] [--key K] [--addr URL --token T | --data DIR]
  cairn schedule create WORKFLOW EXPR [--input JSON]   e.g. EXPR "rate(5 minutes)", "cron(0 12 * * ? *)"
  cairn schedule list [WORKFLOW]                       your schedules (of one workflow)
  cairn schedule get|pause|resume|delete [WORKFLOW] SCHEDULE   (every schedule command: [--addr URL --token T | --data DIR])
  cairn token    add NAME [--operator] | list | revoke NAME  [--data DIR]   who may call the API (DATA/tokens.json)
  cairn mcp      [--addr URL --token T | --data DIR] [--max-wait 10m]   cairn as an MCP server on stdin/stdout
                 (tools run_agent, get_result, approve, cancel, run_workflow; the API's /v1/mcp serves the same)
  cairn console  --api URL [--token T] [--region R] [--addr 127.0.0.1:PORT]   a deployment's web console on
                 loopback: each request signed with your AWS credentials (or sent with the bearer token T)
  cairn sandboxd --addr HOST:PORT --workspace DIR --state DIR [--idle-timeout D]   (needs SANDBOXD_TOKEN_SHA256)

Every API request is made by a principal: locally a token's name (token add prints the token
once; DATA/token is the token of "owner", an operator, made by the first cairn dev), on AWS the
IAM caller or JWT subject. A principal sees and acts on only its own sessions and workflows;
an operator may also read and cancel everyone's.

Environment: CAIRN_ADDR, CAIRN_TOKEN, CAIRN_DATA supply the flags' defaults.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), interruptSignals(os.Args[1])...)
	defer stop()
	env := envDefaults{Addr: os.Getenv("CAIRN_ADDR"), Token: os.Getenv("CAIRN_TOKEN"), Data: os.Getenv("CAIRN_DATA"), Environ: os.Environ()}
	var err error
	args := os.Args[2:]
	switch os.Args[1] {
	case "console":
		err = cmdConsole(ctx, env, args)
	case "dev":
		err = cmdDev(ctx, env, args)
	case "run":
		err = cmdRun(ctx, env, args)
	case "approve":
		err = cmdApprove(ctx, env, args)
	case "cancel":
		err = cmdCancel(ctx, env, args)
	case "retry":
		err = cmdRetry(ctx, env, args)
	case "sessions":
		err = cmdSessions(ctx, env, args)
	case "show":
		err = cmdShow(ctx, env, args)
	case "workflow":
		err = cmdWorkflow(ctx, env, args)
	case "schedule":
		err = cmdSchedule(ctx, env, args)
	case "token":
		err = cmdToken(ctx, env, args)
	case "mcp":
		err = cmdMCP(ctx, env, args)
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
