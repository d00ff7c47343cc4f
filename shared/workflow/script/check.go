package script

import (
	"errors"
	"fmt"
	"strings"

	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Builtins names what a script may use besides Starlark's universal
// functions (len, range, fail, …). Nothing else is predeclared: no load,
// no file, environment, network or clock access. parallel_map is another
// name for map.
func Builtins() []string {
	return []string{"agent", "input", "json", "map", "now", "parallel_map", "start", "wait"}
}

func isPredeclared(name string) bool {
	switch name {
	case "agent", "input", "json", "map", "now", "parallel_map", "start", "wait":
		return true
	}
	return false
}

// fileOptions: top-level for/if and reassigned globals are allowed (a
// script may loop at top level and set result); while loops, recursion
// and the set type stay off (Starlark's defaults).
func fileOptions() *syntax.FileOptions {
	return &syntax.FileOptions{TopLevelControl: true, GlobalReassign: true}
}

// Problem is one error in a script, at a 1-based line and column.
type Problem struct {
	Line int    `json:"line"`
	Col  int    `json:"col"`
	Msg  string `json:"message"`
}

// Error lists every problem Check found; it wraps contracts.ErrInvalid.
// Error() is one "name:line:col: message" line per problem.
type Error struct {
	Name     string
	Problems []Problem
}

func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = fmt.Sprintf("%s:%d:%d: %s", e.Name, p.Line, p.Col, p.Msg)
	}
	return strings.Join(lines, "\n")
}

func (e *Error) Unwrap() error { return contracts.ErrInvalid }

// Check parses and resolves a script as Evaluate would: syntax errors,
// undefined names (anything that is not a builtin, a Starlark universal or
// defined by the script), load statements, and the result convention
// (main(input) or a global result, exactly one). The error is an *Error
// wrapping contracts.ErrInvalid. name is the file name used in positions.
func Check(name, src string) error {
	_, err := compile(name, src)
	return err
}

// compile parses, checks and compiles a script.
func compile(name, src string) (*starlark.Program, error) {
	f, err := fileOptions().Parse(name, src, 0)
	if err != nil {
		var se syntax.Error
		if errors.As(err, &se) {
			return nil, &Error{Name: name, Problems: []Problem{problem(se.Pos, se.Msg)}}
		}
		return nil, &Error{Name: name, Problems: []Problem{{Line: 1, Col: 1, Msg: err.Error()}}}
	}
	var problems []Problem
	for _, stmt := range f.Stmts {
		if l, ok := stmt.(*syntax.LoadStmt); ok {
			problems = append(problems, problem(l.Load, "load is not allowed in a workflow script"))
		}
	}
	prog, err := starlark.FileProgram(f, isPredeclared)
	if err != nil {
		var list resolve.ErrorList
		if !errors.As(err, &list) {
			return nil, &Error{Name: name, Problems: append(problems, Problem{Line: 1, Col: 1, Msg: err.Error()})}
		}
		for _, e := range list {
			problems = append(problems, problem(e.Pos, e.Msg))
		}
	} else {
		problems = append(problems, convention(f)...)
	}
	if len(problems) > 0 {
		return nil, &Error{Name: name, Problems: problems}
	}
	return prog, nil
}

// convention checks that the script defines exactly one of main (a
// function of one parameter) and a global result.
func convention(f *syntax.File) []Problem {
	var mainAt, resultAt *syntax.Ident
	for _, b := range f.Module.(*resolve.Module).Globals {
		switch b.First.Name {
		case "main":
			mainAt = b.First
		case "result":
			resultAt = b.First
		}
	}
	switch {
	case mainAt == nil && resultAt == nil:
		return []Problem{{Line: 1, Col: 1, Msg: "the script must define main(input) or set a global result"}}
	case mainAt != nil && resultAt != nil:
		return []Problem{problem(resultAt.NamePos, "define main(input) or set a global result, not both")}
	case mainAt != nil:
		for _, stmt := range f.Stmts {
			if d, ok := stmt.(*syntax.DefStmt); ok && d.Name.Name == "main" && len(d.Params) != 1 {
				return []Problem{problem(d.Def, fmt.Sprintf("main must take one parameter (the input), not %d", len(d.Params)))}
			}
		}
	}
	return nil
}

func problem(pos syntax.Position, msg string) Problem {
	return Problem{Line: int(pos.Line), Col: int(pos.Col), Msg: msg}
}
