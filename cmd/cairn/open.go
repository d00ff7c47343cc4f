package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/auth"
	"github.com/cairnrun/cairn/shared/contracts"
	embedded "github.com/cairnrun/cairn/shared/embedded/backend"
)

// target is where a command talks to: a dev server (--addr) or an embedded
// runtime on a data directory (--data).
type target struct {
	addr, token, data string
}

func (t *target) flags(fs *flag.FlagSet, env envDefaults) {
	fs.StringVar(&t.addr, "addr", env.Addr, "dev server address (host:port or URL); empty = embedded")
	fs.StringVar(&t.token, "token", env.Token, "API bearer token (default: read from DATA/token)")
	fs.StringVar(&t.data, "data", env.Data, "data directory of the embedded runtime (default ~/.local/share/cairn)")
}

func defaultData() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "cairn")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ".cairn"
	}
	return filepath.Join(home, ".local", "share", "cairn")
}

// open returns a client and, in embedded mode, the running runtime (the
// caller cancels ctx and closes it).
func (t *target) open(ctx context.Context, env envDefaults) (*client, func(), error) {
	if t.addr != "" {
		cl := remoteClient(t.addr, t.token)
		if t.token == "" && t.data != "" {
			cl.tokenFile = filepath.Join(t.data, "token") // re-read when a follower reconnects
			cl.reloadToken()
		}
		return cl, func() {}, nil
	}
	data := t.data
	if data == "" {
		data = defaultData()
	}
	logf, err := openLog(data)
	if err != nil {
		return nil, nil, err
	}
	self, err := os.Executable()
	if err != nil {
		logf.Close()
		return nil, nil, fmt.Errorf("locating the cairn binary (it runs sandboxd): %w", err)
	}
	rt, err := embedded.New(ctx, embedded.Config{DataDir: data, Env: sandboxEnv(env.Environ), Getenv: env.getenv, Sandboxd: []string{self, "sandboxd"}, Isolate: []string{self, "isolate"},
		Runtime: assemble.Config{Log: slog.New(slog.NewJSONHandler(logf, nil)), DefaultModel: "scripted:plain", Authenticate: asOwner}})
	if err != nil {
		logf.Close()
		return nil, nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { rt.Serve(sctx); close(done) }()
	cl := &client{base: "http://embedded", http: &http.Client{Transport: inProcess{rt.API}}}
	return cl, func() { cancel(); <-done; rt.Close(); logf.Close() }, nil
}

// asOwner is the principal of the embedded CLI: whoever opens the data
// directory (holding its lock, able to read its database) is its owner,
// the principal DATA/token authenticates on a dev server.
func asOwner(*http.Request) (contracts.Principal, error) {
	return contracts.Principal{Name: auth.OwnerName, Operator: true}, nil
}

func openLog(data string) (*os.File, error) {
	if err := os.MkdirAll(data, 0o700); err != nil {
		return nil, fmt.Errorf("creating data dir: %w", err)
	}
	return os.OpenFile(filepath.Join(data, "cairn.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
}
