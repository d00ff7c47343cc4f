package script_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/workflow/script"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string // each a line of the error; none = valid
	}{
		{"result", "result = agent('hi').output\n", nil},
		{"main", "def main(input):\n    return [r.output for r in map(lambda d: start(d), input)]\n", nil},
		{"top-level loop", "out = []\nfor d in input:\n    out.append(start(d))\nresult = [r.ok for r in wait(out)]\n", nil},
		{"every builtin", "result = [agent, start, wait, map, now(), input, json.encode(1)]\n", nil},
		{"syntax error", "result = 1 +\n", []string{"w.star:1:13: got newline, want primary expression"}},
		{"unclosed call", "result = agent('x'\n", []string{"w.star:2:1: got end of file, want ')'"}},
		{"undefined names, all reported", "x = foo\nresult = bar(x)\n", []string{"w.star:1:5: undefined: foo", "w.star:2:10: undefined: bar"}},
		{"environment", "result = getenv('HOME')\n", []string{"w.star:1:10: undefined: getenv"}},
		{"files", "result = open('/etc/passwd').read()\n", []string{"w.star:1:10: undefined: open"}},
		{"network", "result = http.get('http://169.254.169.254/')\n", []string{"w.star:1:10: undefined: http"}},
		{"os module", "result = os.environ\n", []string{"w.star:1:10: undefined: os"}},
		{"time", "result = time.now()\n", []string{"w.star:1:10: undefined: time"}},
		{"load", "load('x.star', 'y')\nresult = y\n", []string{"w.star:1:1: load is not allowed in a workflow script"}},
		{"while", "result = 0\nwhile True:\n    pass\n", []string{"w.star:2:1: this Starlark dialect does not support while loops"}},
		{"neither main nor result", "x = 1\n", []string{"w.star:1:1: the script must define main(input) or set a global result"}},
		{"both main and result", "def main(input):\n    return 1\nresult = 2\n", []string{"w.star:3:1: define main(input) or set a global result, not both"}},
		{"main without its parameter", "def main():\n    return 1\n", []string{"w.star:1:1: main must take one parameter (the input), not 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := script.Check("w.star", tt.src)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Check passed, want %q", tt.want)
			}
			if !errors.Is(err, contracts.ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
			var se *script.Error
			if !errors.As(err, &se) || len(se.Problems) != len(tt.want) {
				t.Fatalf("error %#v, want %d problems", err, len(tt.want))
			}
			if got := strings.Split(err.Error(), "\n"); strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("error:\n%s\nwant:\n%s", err, strings.Join(tt.want, "\n"))
			}
			if se.Problems[0].Line < 1 || se.Problems[0].Col < 1 {
				t.Errorf("problem without a position: %+v", se.Problems[0])
			}
		})
	}
}

func TestBuiltinsAreTheOnlyPredeclaredNames(t *testing.T) {
	for _, name := range script.Builtins() {
		if err := script.Check("w.star", "result = "+name+"\n"); err != nil {
			t.Errorf("builtin %s: %v", name, err)
		}
	}
	for _, name := range []string{"load_file", "env", "environ", "exec", "system", "socket", "fetch", "sleep", "random", "struct", "module", "print_env"} {
		if err := script.Check("w.star", "result = "+name+"\n"); err == nil {
			t.Errorf("%s resolves; only the documented builtins should", name)
		}
	}
}
