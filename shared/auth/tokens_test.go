package auth_test

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cairnrun/cairn/shared/auth"
	"github.com/cairnrun/cairn/shared/contracts"
)

func TestAddAuthenticateListRevoke(t *testing.T) {
	dir := t.TempDir()
	st := auth.Open(dir)
	if _, err := st.Authenticate("anything"); !errors.Is(err, contracts.ErrPermission) {
		t.Fatalf("no token file: %v, want ErrPermission", err)
	}
	ci, err := st.Add("ci", false)
	if err != nil {
		t.Fatal(err)
	}
	ops, err := st.Add("ops@example", true)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := st.Authenticate(ci); err != nil || p != (contracts.Principal{Name: "ci"}) {
		t.Fatalf("ci's token: %+v %v", p, err)
	}
	if p, err := st.Authenticate(ops); err != nil || p != (contracts.Principal{Name: "ops@example", Operator: true}) {
		t.Fatalf("ops's token: %+v %v", p, err)
	}
	for _, bad := range []string{"", "nope", ci + "x", strings.ToUpper(ci)} {
		if _, err := st.Authenticate(bad); !errors.Is(err, contracts.ErrPermission) {
			t.Fatalf("token %q: %v, want ErrPermission", bad, err)
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, auth.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), ci) || strings.Contains(string(raw), ops) || !strings.Contains(string(raw), auth.Hash(ci)) {
		t.Fatalf("the file keeps tokens, not their hashes: %s", raw)
	}
	if fi, _ := os.Stat(filepath.Join(dir, auth.FileName)); fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %04o, want 0600", fi.Mode().Perm())
	}
	list, err := st.List()
	if err != nil || len(list) != 2 || list[0].Name != "ci" || list[1].Name != "ops@example" || !list[1].Operator || list[0].CreatedAt.IsZero() {
		t.Fatalf("List = %+v %v", list, err)
	}
	if _, err := st.Add("ci", true); !errors.Is(err, contracts.ErrExists) {
		t.Fatalf("adding ci again: %v, want ErrExists", err)
	}
	for _, name := range []string{"", "two words", "a/b", strings.Repeat("n", 65), "ünï"} {
		if _, err := st.Add(name, false); !errors.Is(err, contracts.ErrInvalid) {
			t.Fatalf("name %q: %v, want ErrInvalid", name, err)
		}
	}
	if err := st.Revoke("ci"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Authenticate(ci); !errors.Is(err, contracts.ErrPermission) {
		t.Fatalf("revoked token: %v, want ErrPermission", err)
	}
	if err := st.Revoke("ci"); !errors.Is(err, contracts.ErrNotFound) {
		t.Fatalf("revoking twice: %v, want ErrNotFound", err)
	}
	if err := st.Revoke(auth.OwnerName); !errors.Is(err, contracts.ErrInvalid) {
		t.Fatalf("revoking the owner: %v, want ErrInvalid", err)
	}
}

// A server's Store sees tokens another process adds and revokes, without
// a restart.
func TestARunningStoreSeesChanges(t *testing.T) {
	dir := t.TempDir()
	server, cli := auth.Open(dir), auth.Open(dir)
	if err := server.SetOwner("owner-token"); err != nil {
		t.Fatal(err)
	}
	if p, err := server.Authenticate("owner-token"); err != nil || p != (contracts.Principal{Name: auth.OwnerName, Operator: true}) {
		t.Fatalf("owner: %+v %v", p, err)
	}
	tok, err := cli.Add("bob", false)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := server.Authenticate(tok); err != nil || p.Name != "bob" {
		t.Fatalf("a token added while running: %+v %v", p, err)
	}
	if err := cli.Revoke("bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := server.Authenticate(tok); !errors.Is(err, contracts.ErrPermission) {
		t.Fatalf("a token revoked while running: %v, want ErrPermission", err)
	}
	// The owner's token rotated (cairn dev --token): the old one is refused,
	// the entry keeps its creation time.
	before, _ := server.List()
	if err := cli.SetOwner("new-owner-token"); err != nil {
		t.Fatal(err)
	}
	if _, err := server.Authenticate("owner-token"); !errors.Is(err, contracts.ErrPermission) {
		t.Fatalf("the owner's old token: %v", err)
	}
	after, _ := server.List()
	if _, err := server.Authenticate("new-owner-token"); err != nil || len(after) != 1 || !after[0].CreatedAt.Equal(before[0].CreatedAt) {
		t.Fatalf("rotated owner: %v, %+v (was %+v)", err, after, before)
	}
}

// Concurrent changes from several processes' stores are all kept (the
// file lock serialises read-modify-write).
func TestConcurrentAddsAreAllKept(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	toks := make([]string, 12)
	for i := range toks {
		wg.Go(func() {
			tok, err := auth.Open(dir).Add(fmt.Sprint("p", i), false)
			if err != nil {
				t.Error(err)
			}
			toks[i] = tok
		})
	}
	wg.Wait()
	st := auth.Open(dir)
	for i, tok := range toks {
		if p, err := st.Authenticate(tok); err != nil || p.Name != fmt.Sprint("p", i) {
			t.Fatalf("token %d: %+v %v", i, p, err)
		}
	}
}

// A token file that is a symlink, readable by others, or not ours is not
// trusted: every token is refused with an error that is not a plain
// "unknown token".
func TestUntrustedFilesAreRefused(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, dir, path string)
	}{
		{"symlink", func(t *testing.T, dir, path string) {
			real := filepath.Join(dir, "elsewhere.json")
			if err := os.Rename(path, real); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(real, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"group readable", func(t *testing.T, dir, path string) {
			if err := os.Chmod(path, 0o640); err != nil {
				t.Fatal(err)
			}
		}},
		{"world writable", func(t *testing.T, dir, path string) {
			if err := os.Chmod(path, 0o602); err != nil {
				t.Fatal(err)
			}
		}},
		{"a directory", func(t *testing.T, dir, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
		{"not json", func(t *testing.T, dir, path string) {
			if err := os.WriteFile(path, []byte("ci abc\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			st := auth.Open(dir)
			tok, err := st.Add("ci", false)
			if err != nil {
				t.Fatal(err)
			}
			c.setup(t, dir, st.Path())
			_, err = st.Authenticate(tok)
			if err == nil || errors.Is(err, contracts.ErrPermission) {
				t.Fatalf("Authenticate = %v, want the file refused", err)
			}
			if _, err := st.Add("other", false); err == nil {
				t.Fatal("Add on an untrusted file succeeded")
			}
		})
	}
}

func TestRequestReadsTheBearerToken(t *testing.T) {
	st := auth.Open(t.TempDir())
	tok, err := st.Add("ci", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		header string
		ok     bool
	}{
		{"Bearer " + tok, true}, {"bearer " + tok, true}, {"BEARER   " + tok, true}, {" Bearer " + tok + " ", true},
		{"", false}, {"Bearer", false}, {"Bearer ", false}, {"Basic " + tok, false}, {"Bearer" + tok, false}, {tok, false},
	} {
		r, _ := http.NewRequest("GET", "http://x/", nil)
		if c.header != "" {
			r.Header.Set("Authorization", c.header)
		}
		p, err := st.Request(r)
		if c.ok != (err == nil) || c.ok && p.Name != "ci" {
			t.Errorf("Authorization %q: %+v %v", c.header, p, err)
		}
		if !c.ok && !errors.Is(err, contracts.ErrPermission) {
			t.Errorf("Authorization %q: %v, want ErrPermission", c.header, err)
		}
	}
}
