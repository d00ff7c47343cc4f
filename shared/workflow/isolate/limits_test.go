package isolate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/workflow/script"
)

// probeArg makes the test binary a probe (see TestMain): it locks itself
// down as Main does, then reports what it can still do.
const probeArg = "isolate-probe"

type probeReport struct {
	Limits      map[string][2]uint64 `json:"limits"` // soft, hard
	DataBase    uint64               `json:"data_base"`
	ForkError   string               `json:"fork_error"`
	OpenError   string               `json:"open_error"`
	Evaluations int                  `json:"evaluations"`
}

func probe() int {
	if err := lockDown(maxOpenFiles); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	base := ownDataBytes()
	if err := applyLimits(Limits{MemoryMiB: 64, CPUSeconds: 20}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	rep := probeReport{Limits: map[string][2]uint64{}, DataBase: base}
	for name, res := range map[string]int{"core": unix.RLIMIT_CORE, "fsize": unix.RLIMIT_FSIZE, "nofile": unix.RLIMIT_NOFILE,
		"nproc": unix.RLIMIT_NPROC, "data": unix.RLIMIT_DATA, "cpu": unix.RLIMIT_CPU} {
		var rl unix.Rlimit
		unix.Getrlimit(res, &rl)
		rep.Limits[name] = [2]uint64{rl.Cur, rl.Max}
	}
	rep.ForkError = fmt.Sprint(exec.Command("/bin/true").Run())
	var files []*os.File
	for range 2 * maxOpenFiles {
		f, err := os.Open("/dev/null")
		if err != nil {
			rep.OpenError = err.Error()
			break
		}
		files = append(files, f)
	}
	for _, f := range files {
		f.Close()
	}
	// The runtime lives on without new threads: concurrent evaluations,
	// collections, blocking writes.
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range 4 {
		wg.Go(func() {
			for range 20 {
				r := script.Evaluate(context.Background(), contracts.EvalRequest{Script: "result = len([str(i) * 10 for i in range(20000)])\n"})
				runtime.GC()
				fmt.Fprint(io.Discard, r.Status)
				if r.Status == contracts.EvalDone {
					mu.Lock()
					rep.Evaluations++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	json.NewEncoder(os.Stdout).Encode(rep)
	return 0
}

// TestSelfLimits runs the probe: as nobody when the tests run as root (the
// kernel exempts root from RLIMIT_NPROC), else as the current user.
func TestSelfLimits(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(binDir, "probe.test")
	if err := copyFile(self, bin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, probeArg)
	cmd.Env = []string{}
	cmd.Dir = "/"
	asNobody := os.Geteuid() == 0
	if asNobody {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("probe: %v: %s", err, ee.Stderr)
		}
		t.Skipf("cannot run the probe as nobody: %v", err)
	}
	var rep probeReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("probe output %q: %v", out, err)
	}
	t.Logf("probe (as nobody: %t): %+v", asNobody, rep)
	want := map[string][2]uint64{
		"core": {0, 0}, "fsize": {maxFileBytes, maxFileBytes}, "nofile": {maxOpenFiles, maxOpenFiles},
		"nproc": {0, 0}, "cpu": {20, 21},
	}
	for name, w := range want {
		if got := rep.Limits[name]; got != w {
			t.Errorf("%s limit = %v, want %v", name, got, w)
		}
	}
	// RLIMIT_DATA: what the process had when it set the limit, plus 64 MiB.
	if d := rep.Limits["data"]; d[0] != d[1] || d[0] < rep.DataBase+64<<20 || d[0] > rep.DataBase+72<<20 {
		t.Errorf("data limit = %v, want the process's own %d + 64 MiB", d, rep.DataBase)
	}
	if !strings.Contains(rep.ForkError, "resource temporarily unavailable") {
		t.Errorf("fork: %q, want refused (EAGAIN)", rep.ForkError)
	}
	if !strings.Contains(rep.OpenError, "too many open files") {
		t.Errorf("opening %d files: %q, want EMFILE", 2*maxOpenFiles, rep.OpenError)
	}
	if rep.Evaluations != 80 {
		t.Errorf("%d of 80 evaluations finished under the limits", rep.Evaluations)
	}
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}
