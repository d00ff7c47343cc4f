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
		sc, err := cl.CreateSchedule(ctx, pos[0], pos[1], in)
		if err != nil {
			return fmt.Errorf("creating schedule: %w", err)
		}
		printSchedule(summary(sc))
		return nil
	case "list":
		wf := ""
		if len(pos) == 1 {
			wf = pos[0]
		}
		return eachSchedule(ctx, cl, wf, func(sc client.ScheduleSummary) bool { printSchedule(sc); return true })
	}
	wf, id := "", pos[len(pos)-1]
	if len(pos) == 2 {
		wf = pos[0]
	} else if wf, err = scheduleWorkflow(ctx, cl, id); err != nil {
		return err
	}
	switch verb {
	case "get":
		sc, err := cl.Schedule(ctx, wf, id)
		if err != nil {
			return err
		}
		out, _ := json.MarshalIndent(sc, "", "  ")
		fmt.Fprintln(os.Stdout, string(out))
	case "pause", "resume":
		set := cl.PauseSchedule
		if verb == "resume" {
			set = cl.ResumeSchedule
		}
		sc, err := set(ctx, wf, id)
		if err != nil {
			return err
		}
		printSchedule(summary(sc))
	case "delete":
		if err := cl.DeleteSchedule(ctx, wf, id); err != nil {
			return err
		}
		fmt.Printf("schedule %s deleted\n", id)
	}
	return nil
}

// summary is a schedule as lists show it.
func summary(sc contracts.Schedule) client.ScheduleSummary {
	return client.ScheduleSummary{ID: sc.ID, WorkflowID: sc.WorkflowID, Expression: sc.Expression, Owner: sc.Owner,
		Paused: sc.Paused, InputBytes: len(sc.Input), CreatedAt: sc.CreatedAt, UpdatedAt: sc.UpdatedAt}
}

// printSchedule prints one line: id, workflow, expression, state, created.
func printSchedule(sc client.ScheduleSummary) {
	state := "active"
	if sc.Paused {
		state = "paused"
	}
	fmt.Printf("%s  %s  %-22s  %s  %s\n", sc.ID, sc.WorkflowID, sc.Expression, state, sc.CreatedAt.Format(time.RFC3339))
}

// eachSchedule pages the caller's schedules (of workflow wf, or of every
// workflow when ""), calling f per schedule until it returns false.
func eachSchedule(ctx context.Context, cl *client.Client, wf string, f func(client.ScheduleSummary) bool) error {
	for sc, err := range client.All(func(cursor string) (client.Page[client.ScheduleSummary], error) {
		opts := client.ListOptions{Limit: 100, Cursor: cursor}
		if wf == "" {
			return cl.Schedules(ctx, opts)
		}
		return cl.WorkflowSchedules(ctx, wf, opts)
	}) {
		if err != nil {
			return err
		}
		if !f(sc) {
			return nil
		}
	}
	return nil
}

// scheduleWorkflow finds the workflow of schedule id among the caller's
// schedules.
func scheduleWorkflow(ctx context.Context, cl *client.Client, id string) (string, error) {
	wf := ""
	err := eachSchedule(ctx, cl, "", func(sc client.ScheduleSummary) bool {
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
