package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/cairnrun/cairn/client"
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
func (t *target) open(ctx context.Context, env envDefaults) (*client.Client, func(), error) {
	if t.addr != "" {
		var opts []client.Option
		if t.token == "" && t.data != "" {
			opts = append(opts, client.WithTokenFile(client.TokenPath(t.data))) // re-read when a follower reconnects
		}
		cl, err := remoteClient(t.addr, t.token, opts...)
		if err != nil {
			return nil, nil, err
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
	cl, err := client.New("", client.WithHandler(rt.API)) // the very API a server serves, in-process
	if err != nil {
		cancel()
		<-done
		rt.Close()
		logf.Close()
		return nil, nil, err
	}
	return cl, func() { cancel(); <-done; rt.Close(); logf.Close() }, nil
}

// remoteClient is a client of a dev server at addr (host:port or URL)
// with the bearer token (none if "").
func remoteClient(addr, token string, opts ...client.Option) (*client.Client, error) {
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	if token != "" {
		opts = append(opts, client.WithBearer(token))
	}
	return client.New(addr, opts...)
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
