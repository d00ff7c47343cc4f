package storetest

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
)

// RunBlob checks a BlobStore: create-if-absent PutBlob, exact GetBlob, and
// ErrNotFound for a missing key.
func RunBlob(t *testing.T, newStore func(t *testing.T) contracts.BlobStore) {
	run(t, newStore, []subtest[contracts.BlobStore]{
		{"PutGet", testBlobPutGet},
		{"PutExisting", testBlobPutExisting},
		{"GetMissing", testBlobGetMissing},
	})
}

func testBlobPutGet(t *testing.T, s contracts.BlobStore) {
	ctx := context.Background()
	p := uniq(t)
	big := bytes.Repeat([]byte{0, 1, 2, 0xff, 'x'}, 200_000) // 1 MB, binary
	for key, data := range map[string][]byte{p + "-small": []byte("hello"), p + "-big": big} {
		if err := s.PutBlob(ctx, key, data); err != nil {
			t.Fatalf("PutBlob(%s): %v", key, err)
		}
		got, err := s.GetBlob(ctx, key)
		if err != nil {
			t.Fatalf("GetBlob(%s): %v", key, err)
		}
		if !bytes.Equal(got, data) {
			t.Errorf("GetBlob(%s) returned %d bytes, differing from the %d put", key, len(got), len(data))
		}
	}
}

func testBlobPutExisting(t *testing.T, s contracts.BlobStore) {
	ctx := context.Background()
	key := uniq(t)
	if err := s.PutBlob(ctx, key, []byte("first")); err != nil {
		t.Fatalf("PutBlob: %v", err)
	}
	if err := s.PutBlob(ctx, key, []byte("second")); err != nil {
		t.Fatalf("PutBlob(existing): err = %v, want nil (no-op)", err)
	}
	got, err := s.GetBlob(ctx, key)
	if err != nil {
		t.Fatalf("GetBlob: %v", err)
	}
	if string(got) != "first" {
		t.Errorf("GetBlob = %q, want %q", got, "first")
	}
}

func testBlobGetMissing(t *testing.T, s contracts.BlobStore) {
	if _, err := s.GetBlob(context.Background(), uniq(t)); !errors.Is(err, contracts.ErrNotFound) {
		t.Errorf("GetBlob(missing): err = %v, want ErrNotFound", err)
	}
}
