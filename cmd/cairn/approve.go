package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/cairnrun/cairn/client"
	"github.com/cairnrun/cairn/shared/contracts"
)

func cmdApprove(ctx context.Context, env envDefaults, args []string) error {
	fs := flag.NewFlagSet("approve", flag.ContinueOnError)
	var t target
	t.flags(fs, env)
	reason := fs.String("reason", "", "reason recorded with the decision")
	wait := fs.Bool("wait", true, "follow the turn after deciding")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 3 {
		return errors.New("approve: want SESSION APPROVAL allow|deny")
	}
	sid, aid, d := pos[0], pos[1], contracts.Decision(pos[2])
	cl, closeFn, err := t.open(ctx, env)
	if err != nil {
		return err
	}
	defer closeFn()
	sess, err := cl.Session(ctx, sid)
	if err != nil {
		return err
	}
	if _, err := cl.Decide(ctx, sid, aid, d, *reason); err != nil {
		return err
	}
	fmt.Printf("%s %s\n", d, aid)
	if !*wait || sess.Active == "" {
		return nil
	}
	return follow(ctx, cl, os.Stdout, sid, sess.Active, contracts.Ask, nil)
}

func cmdSessions(ctx context.Context, env envDefaults, args []string) error {
	fs := flag.NewFlagSet("sessions", flag.ContinueOnError)
	var t target
	t.flags(fs, env)
	if err := fs.Parse(args); err != nil {
		return err
	}
	cl, closeFn, err := t.open(ctx, env)
	if err != nil {
		return err
	}
	defer closeFn()
	for s, err := range client.All(func(cursor string) (client.Page[client.SessionSummary], error) {
		return cl.Sessions(ctx, client.ListOptions{Limit: 100, Cursor: cursor})
	}) {
		if err != nil {
			return err
		}
		state := "idle"
		if s.Active != "" {
			state = "running " + s.Active
		}
		fmt.Printf("%s  %-16s  %s  %s\n", s.ID, s.Model, s.CreatedAt.Format(time.RFC3339), state)
	}
	return nil
}

func cmdShow(ctx context.Context, env envDefaults, args []string) error {
	fs := flag.NewFlagSet("show", flag.ContinueOnError)
	var t target
	t.flags(fs, env)
	tree := fs.Bool("tree", false, "print the session's transcript tree (every branch, with node ids to fork from)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 1 || len(pos) > 2 {
		return errors.New("show: want SESSION [SUBMISSION]")
	}
	cl, closeFn, err := t.open(ctx, env)
	if err != nil {
		return err
	}
	defer closeFn()
	if *tree {
		return printTree(ctx, cl, os.Stdout, pos[0])
	}
	var v any
	if len(pos) == 2 {
		v, err = cl.Submission(ctx, pos[0], pos[1])
	} else {
		v, err = cl.Session(ctx, pos[0])
	}
	if err != nil {
		return err
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
