package storetest

import (
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/testkit/conformance/internal/unique"
)

// uniq returns an id prefix unique to this test and this run.
func uniq(t *testing.T) string { return unique.Prefix(t) }

// base is a fixed instant with nanoseconds and a non-UTC offset, to prove
// timestamps round-trip exactly.
var base = time.Date(2031, 5, 6, 7, 8, 9, 123456789, time.FixedZone("X", -5*3600))

// subtest is one named check of a suite.
type subtest[S any] struct {
	name string
	fn   func(t *testing.T, s S)
}

func run[S any](t *testing.T, newStore func(t *testing.T) S, tests []subtest[S]) {
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t)) })
	}
}
