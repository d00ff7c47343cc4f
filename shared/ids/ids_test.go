package ids_test

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/ids"
)

// scriptClock returns the times of its script in order, then repeats the
// last one.
type scriptClock struct {
	mu    sync.Mutex
	times []time.Time
}

func (c *scriptClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.times[0]
	if len(c.times) > 1 {
		c.times = c.times[1:]
	}
	return t
}

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// checkOrdered fails unless got is strictly increasing (hence unique).
func checkOrdered(t *testing.T, got []string) {
	t.Helper()
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("id %d %q is not after id %d %q", i, got[i], i-1, got[i-1])
		}
	}
}

func TestNewOrdering(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name  string
		times []time.Time
		n     int
	}{
		{"frozen clock", []time.Time{t0}, 5000},
		{"advancing clock", []time.Time{t0, t0.Add(ms), t0.Add(2 * ms), t0.Add(time.Hour)}, 50},
		{"clock goes back", []time.Time{t0, t0.Add(ms), t0.Add(-time.Hour), t0.Add(-time.Hour), t0.Add(ms), t0.Add(2 * ms), t0.Add(-ms)}, 50},
		{"clock jumps back repeatedly", []time.Time{t0.Add(5 * ms), t0.Add(4 * ms), t0.Add(3 * ms), t0.Add(2 * ms), t0.Add(6 * ms), t0}, 50},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := ids.New(&scriptClock{times: c.times})
			got := make([]string, c.n)
			for i := range got {
				got[i] = g.New("sub")
			}
			checkOrdered(t, got)
		})
	}
}

func TestNewConcurrentUnique(t *testing.T) {
	g := ids.New(&scriptClock{times: []time.Time{t0}})
	const workers, each = 8, 500
	out := make([][]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				out[w] = append(out[w], g.New("ses"))
			}
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, ws := range out {
		checkOrdered(t, ws) // each goroutine sees its own ids in order
		for _, id := range ws {
			if seen[id] {
				t.Fatalf("duplicate id %q", id)
			}
			seen[id] = true
		}
	}
	if len(seen) != workers*each {
		t.Fatalf("got %d ids, want %d", len(seen), workers*each)
	}
}

func TestNewFormat(t *testing.T) {
	g := ids.New(&scriptClock{times: []time.Time{t0}})
	re := regexp.MustCompile(`^([a-z]+)_([0-9a-f]{12})([0-9]{6})([0-9a-f]{8})$`)
	for _, prefix := range []string{"ses", "sub", "evt"} {
		id := g.New(prefix)
		m := re.FindStringSubmatch(id)
		if m == nil {
			t.Fatalf("id %q does not match %s", id, re)
		}
		if m[1] != prefix {
			t.Errorf("prefix of %q = %q, want %q", id, m[1], prefix)
		}
	}
	// Two generators on the same clock differ by their random part.
	a := ids.New(&scriptClock{times: []time.Time{t0}}).New("sub")
	b := ids.New(&scriptClock{times: []time.Time{t0}}).New("sub")
	if a == b {
		t.Fatalf("two generators minted the same id %q", a)
	}
	if a[:len(a)-8] != b[:len(b)-8] {
		t.Errorf("same clock, same counter: %q and %q should differ only in the random suffix", a, b)
	}
}

func TestNewTimePartIsUnixMillis(t *testing.T) {
	for _, at := range []time.Time{t0, t0.Add(1234 * time.Millisecond), time.UnixMilli(1)} {
		id := ids.New(&scriptClock{times: []time.Time{at}}).New("sub")
		ms, err := strconv.ParseInt(id[len("sub_"):len("sub_")+12], 16, 64)
		if err != nil || ms != at.UnixMilli() {
			t.Errorf("time part of %q = %d (%v), want %d", id, ms, err, at.UnixMilli())
		}
	}
}

func TestDerivedIDs(t *testing.T) {
	const sub = "sub_0193a4b5c6d7000000deadbeef"
	t.Run("deterministic", func(t *testing.T) {
		if ids.Node(sub, 2, contracts.RoleAssistant) != ids.Node(sub, 2, contracts.RoleAssistant) {
			t.Error("Node is not deterministic")
		}
		if ids.StreamKey(sub, 1, 3) != ids.StreamKey(sub, 1, 3) {
			t.Error("StreamKey is not deterministic")
		}
		if ids.Approval(sub, 1, "call_1") != ids.Approval(sub, 1, "call_1") {
			t.Error("Approval is not deterministic")
		}
	})
	t.Run("prefixes", func(t *testing.T) {
		for _, c := range []struct{ id, prefix string }{
			{ids.Node(sub, 0, contracts.RoleUser), "nd_"},
			{ids.StreamKey(sub, 0, 1), "st_"},
			{ids.Approval(sub, 0, "c"), "apr_"},
		} {
			if !strings.HasPrefix(c.id, c.prefix) {
				t.Errorf("%q lacks prefix %q", c.id, c.prefix)
			}
		}
		if a := ids.Approval(sub, 0, "c"); !regexp.MustCompile(`^apr_[0-9a-f]{20}$`).MatchString(a) {
			t.Errorf("approval id %q: want apr_ + 20 hex digits", a)
		}
	})
	t.Run("distinct", func(t *testing.T) {
		seen := map[string]string{}
		add := func(id, what string) {
			t.Helper()
			if prev, ok := seen[id]; ok {
				t.Errorf("%s and %s both map to %q", prev, what, id)
			}
			seen[id] = what
		}
		subs := []string{sub, sub + "1", "sub_1", "sub_11"}
		roles := []contracts.Role{contracts.RoleUser, contracts.RoleAssistant, contracts.RoleTool}
		for _, s := range subs {
			for step := range 12 {
				for _, r := range roles {
					add(ids.Node(s, step, r), "node "+s+"/"+strconv.Itoa(step)+"/"+string(r))
				}
				for attempt := 1; attempt <= 12; attempt++ {
					add(ids.StreamKey(s, step, attempt), "stream "+s+"/"+strconv.Itoa(step)+"/"+strconv.Itoa(attempt))
				}
				for _, call := range []string{"c1", "c11", "toolu_1"} {
					add(ids.Approval(s, step, call), "approval "+s+"/"+strconv.Itoa(step)+"/"+call)
				}
			}
		}
	})
}

// An id is one path segment, whatever it holds: slashes, query marks and
// the dot segments a mux would clean away.
func TestPathSegment(t *testing.T) {
	for id, want := range map[string]string{"ses_1": "ses_1", "a/b": "a%2Fb", "a?b": "a%3Fb", ".": "%2E", "..": "%2E%2E", "...": "...", "a b": "a%20b"} {
		if got := ids.PathSegment(id); got != want {
			t.Errorf("PathSegment(%q) = %q, want %q", id, got, want)
		}
	}
}
