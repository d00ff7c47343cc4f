package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

var errScheduleUsage = errors.New(`usage: cairn schedule create WORKFLOW EXPR [--input JSON] | list [WORKFLOW] | get|pause|resume|delete [WORKFLOW] SCHEDULE   [--addr URL --token T | --data DIR]`)

// cmdSchedule: `cairn schedule create|list|get|pause|resume|delete`, the
// API's schedule routes. A schedule is addressed as WORKFLOW SCHEDULE, or
// by SCHEDULE alone, looked up among the caller's schedules.
func cmdSchedule(ctx context.Context, env envDefaults, args []string) error {
	if len(args) == 0 {
		return errScheduleUsage
	}
	verb := args[0]
	fs := flag.NewFlagSet("schedule "+verb, flag.ContinueOnError)
	var t target
	t.flags(fs, env)
	input := fs.String("input", "", "create: the runs' input, JSON")
	if err := fs.Parse(reorder(args[1:])); err != nil {
		return err
	}
	pos := fs.Args()
	var in json.RawMessage
	if *input != "" {
		if verb != "create" || !json.Valid([]byte(*input)) {
			return fmt.Errorf("--input: valid JSON, for create only: %w", errScheduleUsage)
		}
		in = json.RawMessage(*input)
	}
	switch {
	case verb == "create" && len(pos) == 2, verb == "list" && len(pos) <= 1:
	case (verb == "get" || verb == "pause" || verb == "resume" || verb == "delete") && (len(pos) == 1 || len(pos) == 2):
	default:
		return errScheduleUsage
	}
	cl, closeFn, err := t.open(ctx, env)
	if err != nil {
		return err
	}
	defer closeFn()
	switch verb {
	case "create":
		var sc contracts.Schedule
		body := map[string]any{"expression": pos[1]}
		if in != nil {
			body["input"] = in
		}
		if err := cl.do(ctx, "POST", "/v1/workflows/"+url.PathEscape(pos[0])+"/schedules", body, nil, &sc); err != nil {
			return fmt.Errorf("creating schedule: %w", err)
		}
		printSchedule(sc)
		return nil
	case "list":
		path := "/v1/schedules"
		if len(pos) == 1 {
			path = "/v1/workflows/" + url.PathEscape(pos[0]) + "/schedules"
		}
		return eachSchedule(ctx, cl, path, func(sc contracts.Schedule) bool { printSchedule(sc); return true })
	}
	wf, id := "", pos[len(pos)-1]
	if len(pos) == 2 {
		wf = pos[0]
	} else if wf, err = scheduleWorkflow(ctx, cl, id); err != nil {
		return err
	}
	path := "/v1/workflows/" + url.PathEscape(wf) + "/schedules/" + url.PathEscape(id)
	var sc contracts.Schedule
	switch verb {
	case "get":
		if err := cl.do(ctx, "GET", path, nil, nil, &sc); err != nil {
			return err
		}
		out, _ := json.MarshalIndent(sc, "", "  ")
		fmt.Fprintln(os.Stdout, string(out))
	case "pause", "resume":
		if err := cl.do(ctx, "POST", path+"/"+verb, nil, nil, &sc); err != nil {
			return err
		}
		printSchedule(sc)
	case "delete":
		if err := cl.do(ctx, "DELETE", path, nil, nil, nil); err != nil {
			return err
		}
		fmt.Printf("schedule %s deleted\n", id)
	}
	return nil
}

// printSchedule prints one line: id, workflow, expression, state, created.
func printSchedule(sc contracts.Schedule) {
	state := "active"
	if sc.Paused {
		state = "paused"
	}
	fmt.Printf("%s  %s  %-22s  %s  %s\n", sc.ID, sc.WorkflowID, sc.Expression, state, sc.CreatedAt.Format(time.RFC3339))
}

// eachSchedule pages a schedule list route, calling f per schedule until
// it returns false.
func eachSchedule(ctx context.Context, cl *client, path string, f func(contracts.Schedule) bool) error {
	for next := "?limit=100"; next != ""; {
		var out struct {
			Schedules []contracts.Schedule `json:"schedules"` // summaries: no input
			Next      string               `json:"next_cursor"`
		}
		if err := cl.do(ctx, "GET", path+next, nil, nil, &out); err != nil {
			return err
		}
		for _, sc := range out.Schedules {
			if !f(sc) {
				return nil
			}
		}
		next = ""
		if out.Next != "" {
			next = "?limit=100&cursor=" + url.QueryEscape(out.Next)
		}
	}
	return nil
}

// scheduleWorkflow finds the workflow of schedule id among the caller's
// schedules.
func scheduleWorkflow(ctx context.Context, cl *client, id string) (string, error) {
	wf := ""
	err := eachSchedule(ctx, cl, "/v1/schedules", func(sc contracts.Schedule) bool {
		if sc.ID == id {
			wf = sc.WorkflowID
		}
		return wf == ""
	})
	if err == nil && wf == "" {
		err = fmt.Errorf("schedule %s: not among your schedules (give its workflow too: WORKFLOW SCHEDULE)", id)
	}
	return wf, err
}
