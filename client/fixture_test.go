package client_test

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/auth"
	embedded "github.com/cairnrun/cairn/shared/embedded/backend"
	"github.com/cairnrun/cairn/shared/workflow/isolate"
)

// isolateArg makes the test binary `cairn isolate`: the embedded runtime
// evaluates workflow scripts by running it with this argument.
const isolateArg = "client-test-isolate"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == isolateArg {
		os.Exit(isolate.Main(context.Background(), os.Stdin, os.Stdout, os.Stderr))
	}
	code := m.Run()
	stopExampleServers()
	os.Exit(code)
}

// cairnServer is a real cairn API over HTTP on loopback, as `cairn dev`
// serves it: the embedded runtime on a data directory, its workers
// running, the owner's token (an operator) in DATA/token.
type cairnServer struct {
	URL, Token, Data string
	RT               *assemble.Runtime
	srv              *httptest.Server
	stop             func()
}

const ownerToken = "client-test-token"

// startCairn serves the runtime on data at addr ("127.0.0.1:0": any port).
func startCairn(data, addr string) (*cairnServer, error) {
	tokens := auth.Open(data) // as cairn dev: the owner's token, also in DATA/token
	if err := tokens.SetOwner(ownerToken); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(data, "token"), []byte(ownerToken+"\n"), 0o600); err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	rt, err := embedded.New(context.Background(), embedded.Config{
		DataDir: data, Env: []string{"PATH=" + os.Getenv("PATH")}, Isolate: []string{self, isolateArg},
		Runtime: assemble.Config{Authenticate: tokens.Request},
	})
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		rt.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { rt.Serve(ctx); close(done) }()
	srv := httptest.NewUnstartedServer(rt.API)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	s := &cairnServer{URL: srv.URL, Token: ownerToken, Data: data, RT: rt, srv: srv}
	var once sync.Once
	s.stop = func() {
		once.Do(func() {
			srv.CloseClientConnections()
			srv.Close()
			cancel()
			<-done
			rt.Close()
		})
	}
	return s, nil
}

// newCairn starts a cairn API for the test, stopped when it ends.
func newCairn(t *testing.T) *cairnServer {
	t.Helper()
	s, err := startCairn(t.TempDir(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.stop)
	return s
}

// Addr is the server's host:port.
func (s *cairnServer) Addr() string { return s.srv.Listener.Addr().String() }

// AddToken adds a principal's token (`cairn token add NAME`).
func (s *cairnServer) AddToken(name string) string {
	tok, err := auth.Open(s.Data).Add(name, false)
	if err != nil {
		panic(err)
	}
	return tok
}

// File is the path of a file in a session's sandbox workspace.
func (s *cairnServer) File(sessionID, name string) string {
	return filepath.Join(s.Data, "sandboxes", sessionID, name)
}

var (
	examplesMu      sync.Mutex
	exampleServers  []*cairnServer
	exampleDataDirs []string
)

// exampleServer starts a cairn API for an Example (no *testing.T: it is
// stopped, and its data removed, when the tests end).
func exampleServer() *cairnServer {
	data, err := os.MkdirTemp("", "cairn-client-example-")
	if err != nil {
		panic(err)
	}
	s, err := startCairn(data, "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("starting a cairn API: %v", err))
	}
	examplesMu.Lock()
	defer examplesMu.Unlock()
	exampleServers, exampleDataDirs = append(exampleServers, s), append(exampleDataDirs, data)
	return s
}

func stopExampleServers() {
	examplesMu.Lock()
	defer examplesMu.Unlock()
	for _, s := range exampleServers {
		s.stop()
	}
	for _, d := range exampleDataDirs {
		os.RemoveAll(d)
	}
}
