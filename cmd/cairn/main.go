// Command cairn is the CLI and local server of the cairn agent runtime.
//
//	cairn dev     --data DIR --addr 127.0.0.1:PORT   serve the API, phase workers and repair
//	cairn run     [--addr URL | --data DIR] "prompt" submit a turn and stream its progress
//	cairn approve [--addr URL | --data DIR] SESSION APPROVAL allow|deny
//	cairn sessions / cairn show SESSION [SUBMISSION]
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

const usage = `cairn — a durable AI-agent runtime

usage:
  cairn dev      --data DIR --addr 127.0.0.1:PORT [--token T]
  cairn dev      --backend aws [--endpoint URL] [--table T --bucket B --queue-prefix P] --addr 127.0.0.1:PORT
  cairn run      [--addr URL --token T | --data DIR] [--model scripted:demo] [--session ID] "prompt"
  cairn approve  [--addr URL --token T | --data DIR] SESSION APPROVAL allow|deny [--reason TEXT]
  cairn sessions [--addr URL --token T | --data DIR]
  cairn show     [--addr URL --token T | --data DIR] SESSION [SUBMISSION]

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
	case "help", "-h", "--help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "cairn: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
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
