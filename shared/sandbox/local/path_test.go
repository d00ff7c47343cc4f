package local

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
)

// escapes matches os.Root's unexported error by its text: a Go release
// changing it must fail here, not silently turn escapes into host errors.
func TestRootEscapeErrorText(t *testing.T) {
	r, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := os.Symlink("/", filepath.Join(r.Name(), "l")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"../x", "l/etc"} {
		if _, err := r.Open(name); !escapes(err) {
			t.Errorf("Open(%q): %v is not recognised as an escape", name, err)
		}
	}
	if err := os.WriteFile(filepath.Join(r.Name(), "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.OpenRoot("f"); !isNotDir(err) {
		t.Errorf("OpenRoot on a file: %v is not recognised as not a directory", err)
	}
}

// The symlink rules of os.Root, as the sandbox documents them.
func TestSymlinkRules(t *testing.T) {
	ctx := t.Context()
	sb := newLocal(t, Options{})
	root := sb.Root()
	put := func(rel, content string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, rel string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(root, rel)); err != nil {
			t.Fatal(err)
		}
	}
	put("sub/f.txt", "inside\n")
	put("other/g.txt", "g\n")
	link(filepath.Join(root, "sub/f.txt"), "abs") // absolute, pointing inside
	link("new/target.txt", "dangling")            // relative, dangling, inside
	link("sub", "dirlink")                        // relative, to a directory
	link("../other/g.txt", "sub/up")              // relative, climbing but inside

	// An absolute symlink is refused even when it points inside.
	_, err := sb.ReadFile(ctx, contracts.ReadFileRequest{Path: "abs"})
	if !errors.Is(err, contracts.ErrPermission) {
		t.Errorf("read through an absolute inside link: %v", err)
	}
	// A dangling symlink inside is written through, creating its target
	// (its missing parent is not created: ErrNotFound), and then read.
	if err := sb.WriteFile(ctx, contracts.WriteFileRequest{Path: "dangling", Content: "x"}); !errors.Is(err, contracts.ErrNotFound) {
		t.Errorf("write through a dangling link whose parent is missing: %v", err)
	}
	if err := sb.MakeDir(ctx, "new"); err != nil {
		t.Fatal(err)
	}
	if err := sb.WriteFile(ctx, contracts.WriteFileRequest{Path: "dangling", Content: "x"}); err != nil {
		t.Errorf("write through a dangling inside link: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "new/target.txt")); err != nil || string(b) != "x" {
		t.Errorf("dangling link target = %q, %v", b, err)
	}
	got, err := sb.ReadFile(ctx, contracts.ReadFileRequest{Path: "sub/up"})
	if err != nil || got.Content != "g\n" {
		t.Errorf("read sub/up = %+v, %v", got, err)
	}
	// Walks list inside links but never descend into them.
	names, err := sb.Glob(ctx, "**")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"dirlink", "sub/up", "dangling", "sub/f.txt"} {
		if !slices.Contains(names, want) {
			t.Errorf("Glob ** = %q lacks %q", names, want)
		}
	}
	if slices.Contains(names, "dirlink/f.txt") || slices.Contains(names, "abs") {
		t.Errorf("Glob ** = %q descends into dirlink or lists the absolute link", names)
	}
	// Remove removes links, never their targets.
	for _, p := range []string{"abs", "dirlink", "sub/up"} {
		if err := sb.Remove(ctx, p, true); err != nil {
			t.Errorf("remove %s: %v", p, err)
		}
	}
	for _, p := range []string{"sub/f.txt", "other/g.txt"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("%s after removing links to it: %v", p, err)
		}
	}
}
