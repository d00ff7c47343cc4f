package ids

import (
	"testing"
	"time"
)

type fixedClock time.Time

func (c fixedClock) Now() time.Time { return time.Time(c) }

// The counter has six digits: more ids than that within one clock
// millisecond (a frozen test clock, or a wall clock stuck behind the last
// id) must still sort in creation order. The generator starts just below
// the boundary rather than minting a million ids.
func TestNewPastCounterWidth(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name  string
		clock time.Time // what the clock says while the counter is near full
	}{
		{"frozen clock", now},
		{"clock behind the last id", now.Add(-time.Hour)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := &Generator{clock: fixedClock(c.clock), last: now.UnixMilli(), seq: maxSeq - 3}
			prev := ""
			for i := range 10 {
				id := g.New("x")
				if len(id) != len("x_")+12+6+8 {
					t.Fatalf("id %q has the wrong width", id)
				}
				if id <= prev {
					t.Fatalf("id %d %q is not after %q", i, id, prev)
				}
				prev = id
			}
			// Once the real clock passes the borrowed millisecond, ids continue in order.
			g.clock = fixedClock(now.Add(time.Second))
			if id := g.New("x"); id <= prev {
				t.Fatalf("id %q after the clock moved on is not after %q", id, prev)
			}
		})
	}
}
