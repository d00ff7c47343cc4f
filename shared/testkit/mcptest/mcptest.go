package mcptest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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
	// It listens on every interface (app.listen(PORT)); nothing here may
	// listen beyond loopback, so a preload pins every listen to 127.0.0.1.
	preload := filepath.Join(t.TempDir(), "loopback.cjs")
	if err := os.WriteFile(preload, []byte(loopbackPreload), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("npx", "-y", Everything, mode)
	cmd.Env = append(os.Environ(), fmt.Sprint("PORT=", port), "npm_config_yes=true", "npm_config_update_notifier=false",
		"NODE_OPTIONS=--require "+preload)
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
	if addrs := listeners(port); len(addrs) == 0 || slices.ContainsFunc(addrs, func(a string) bool { return a != "127.0.0.1" }) {
		t.Fatalf("%s %s listens on %v, want 127.0.0.1 only", Everything, mode, addrs)
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

// loopbackPreload makes every TCP listen of a Node.js process bind
// 127.0.0.1, whatever host (or none) it asked for.
const loopbackPreload = `const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const a = args[0];
  if (a !== null && typeof a === "object") {
    if (a.path === undefined) args[0] = Object.assign({}, a, { host: "127.0.0.1" });
  } else if (typeof a === "number" || (typeof a === "string" && /^[0-9]+$/.test(a))) {
    if (typeof args[1] === "string") args[1] = "127.0.0.1";
    else args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
`

// listeners are the local addresses of the sockets listening on port
// (from /proc/net/tcp and tcp6), as dotted IPv4 or "ipv6:<hex>".
func listeners(port int) []string {
	var out []string
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(line)
			if len(fs) < 4 || fs[3] != "0A" { // 0A: LISTEN
				continue
			}
			host, p, ok := strings.Cut(fs[1], ":")
			if n, err := strconv.ParseInt(p, 16, 32); !ok || err != nil || int(n) != port {
				continue
			}
			if len(host) == 8 { // IPv4, little-endian hex
				v, _ := strconv.ParseUint(host, 16, 32)
				out = append(out, fmt.Sprintf("%d.%d.%d.%d", v&0xff, v>>8&0xff, v>>16&0xff, v>>24))
			} else {
				out = append(out, "ipv6:"+host)
			}
		}
	}
	return out
}
