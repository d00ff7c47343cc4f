package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/cairnrun/cairn/shared/auth"
)

// cmdToken manages the token principals of a data directory
// (DATA/tokens.json): add prints a new token once, list shows names,
// operator flags and creation times (never a token), revoke removes one.
// A running `cairn dev` sees the change at its next request.
func cmdToken(_ context.Context, env envDefaults, args []string) error {
	return tokenCommand(os.Stdout, env, args)
}

func tokenCommand(w io.Writer, env envDefaults, args []string) error {
	if len(args) == 0 {
		return errors.New("token: want add NAME [--operator], list or revoke NAME")
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("token "+sub, flag.ContinueOnError)
	data := fs.String("data", env.Data, "data directory (its tokens.json)")
	operator := false
	if sub == "add" {
		fs.BoolVar(&operator, "operator", false, "the principal may read and cancel everyone's work")
	}
	var pos []string
	for { // flags before and after the name
		if err := fs.Parse(args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		pos, args = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
	if *data == "" {
		*data = defaultData()
	}
	st := auth.Open(*data)
	switch {
	case sub == "add" && len(pos) == 1:
		tok, err := st.Add(pos[0], operator)
		if err != nil {
			return fmt.Errorf("token add: %w", err)
		}
		role := ""
		if operator {
			role = " (an operator)"
		}
		fmt.Fprintf(w, "token for %s%s — shown once, keep it:\n%s\n", pos[0], role, tok)
		return nil
	case sub == "list" && len(pos) == 0:
		entries, err := st.List()
		if err != nil {
			return fmt.Errorf("token list: %w", err)
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tOPERATOR\tCREATED")
		for _, e := range entries {
			fmt.Fprintf(tw, "%s\t%v\t%s\n", e.Name, e.Operator, e.CreatedAt.Format(time.RFC3339))
		}
		return tw.Flush()
	case sub == "revoke" && len(pos) == 1:
		if err := st.Revoke(pos[0]); err != nil {
			return fmt.Errorf("token revoke: %w", err)
		}
		fmt.Fprintf(w, "revoked %s\n", pos[0])
		return nil
	}
	return fmt.Errorf("token: want add NAME [--operator], list or revoke NAME (got %q with %d names)", sub, len(pos))
}
