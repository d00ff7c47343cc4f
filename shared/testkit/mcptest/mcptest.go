package mcptest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Everything is the npm package and version the tests run.
const Everything = "@modelcontextprotocol/server-everything@2026.8.31"

// Modes of Everything: the transport it serves.
const (
	Streamable = "streamableHttp" // POST/GET/DELETE /mcp
	SSE        = "sse"            // GET /sse, POST /message
)

// Server is a running server-everything.
type Server struct {
	URL string // the endpoint: …/mcp or …/sse
	cmd *exec.Cmd
}

// Start runs server-everything in mode and returns once it says it
// listens (its own line on stdout, not a sleep); a server that does not
// within startup (npx may download the package first) fails the test.
func Start(t testing.TB, mode string) *Server {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command("npx", "-y", Everything, mode)
	cmd.Env = append(os.Environ(), fmt.Sprint("PORT=", port), "npm_config_yes=true", "npm_config_update_notifier=false")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// It says it listens on stdout in one mode and stderr in the other:
	// both go to one pipe, read line by line.
	out, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Start()
	w.Close()
	if err != nil {
		out.Close()
		t.Fatalf("starting %s: %v", Everything, err)
	}
	s := &Server{cmd: cmd}
	t.Cleanup(s.Kill)
	ready := make(chan bool, 1)
	var mu sync.Mutex
	var said strings.Builder
	go func() {
		defer out.Close()
		sc := bufio.NewScanner(out)
		up := false
		for sc.Scan() {
			mu.Lock()
			if said.Len() < 4096 {
				said.WriteString(sc.Text() + "\n")
			}
			mu.Unlock()
			if !up && strings.Contains(sc.Text(), fmt.Sprint("port ", port)) {
				up = true
				ready <- true
			}
		}
		if !up {
			ready <- false
		}
	}()
	stderr := func() string { mu.Lock(); defer mu.Unlock(); return said.String() }
	const startup = 3 * time.Minute // a first npx run downloads the package
	select {
	case ok := <-ready:
		if !ok {
			t.Fatalf("%s %s exited before listening: %s", Everything, mode, stderr())
		}
	case <-time.After(startup):
		t.Fatalf("%s %s did not listen within %s: %s", Everything, mode, startup, stderr())
	}
	path := "/mcp"
	if mode == SSE {
		path = "/sse"
	}
	s.URL = fmt.Sprintf("http://127.0.0.1:%d%s", port, path)
	return s
}

// Kill stops the server and every process it started, now.
func (s *Server) Kill() {
	if s.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	_ = s.cmd.Wait()
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
