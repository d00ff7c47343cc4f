package ids

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// maxSeq is the largest counter value that fits its six digits.
const maxSeq = 999_999

// Generator implements contracts.IDs.
type Generator struct {
	clock contracts.Clock
	mu    sync.Mutex
	last  int64
	seq   int
}

var _ contracts.IDs = (*Generator)(nil)

// New returns a generator reading time from clock.
func New(clock contracts.Clock) *Generator { return &Generator{clock: clock} }

// New mints a time-ordered unique id with the prefix.
func (g *Generator) New(prefix string) string {
	ms := g.clock.Now().UnixMilli()
	g.mu.Lock()
	if ms <= g.last {
		ms = g.last
		g.seq++
		if g.seq > maxSeq { // counter full: borrow the next millisecond
			ms++
			g.last, g.seq = ms, 0
		}
	} else {
		g.last, g.seq = ms, 0
	}
	seq := g.seq
	g.mu.Unlock()
	return fmt.Sprintf("%s_%012x%06d%s", prefix, ms, seq, RandomHex(4))
}

// Node is the deterministic transcript node id of (submission, step, role).
func Node(submissionID string, step int, role contracts.Role) string {
	return fmt.Sprintf("nd_%s_%d_%s", submissionID, step, role)
}

// StreamKey is the stream store key of one model attempt.
func StreamKey(submissionID string, step, attempt int) string {
	return fmt.Sprintf("st_%s_%d_%d", submissionID, step, attempt)
}

// Effect is the id a sandbox records one tool call's effect under
// (contracts.CallLedger): unique across every turn of a session, where a
// model's own call ids may repeat.
func Effect(submissionID string, step int, callID string) string {
	return fmt.Sprintf("%s/%d/%s", submissionID, step, callID)
}

// Approval is the deterministic id of the approval for one tool call.
func Approval(submissionID string, step int, callID string) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s/%d/%s", submissionID, step, callID)))
	return "apr_" + hex.EncodeToString(h[:10])
}

// hashed is prefix_ + 20 hex digits of sha256 over the parts.
func hashed(prefix string, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s;", len(p), p)
	}
	return prefix + "_" + hex.EncodeToString(h.Sum(nil)[:10])
}

// WorkflowNode is a node's id: from the run and the node's explicit key,
// or, without one, its position among the run's node calls. Replaying the
// same script with the same results yields the same ids.
func WorkflowNode(runID string, seq int, key string) string {
	if key != "" {
		return hashed("wn", runID, "key", key)
	}
	return hashed("wn", runID, "seq", fmt.Sprint(seq))
}

// NodeSession is the id of the session that runs a workflow node.
func NodeSession(runID, nodeID string) string { return hashed("ses", runID, nodeID) }

// ScheduledRun is the id of the run a schedule fires at a time: a duplicate
// firing is the same run.
func ScheduledRun(scheduleID string, at time.Time) string {
	return hashed("run", scheduleID, at.UTC().Format(time.RFC3339Nano))
}

// KeyedRun is the id of a run started with an idempotency key.
func KeyedRun(workflowID, key string) string { return hashed("run", workflowID, "key", key) }

// ToolRun is the id of the run a run_workflow tool call starts.
func ToolRun(submissionID string, step int, callID string) string {
	return hashed("run", submissionID, fmt.Sprint(step), callID)
}

// PathSegment is id escaped as one segment of a URL path: url.PathEscape,
// and "." and ".." escaped too (PathEscape leaves them, and a path that
// holds them resolves to another route).
func PathSegment(id string) string {
	switch id {
	case ".":
		return "%2E"
	case "..":
		return "%2E%2E"
	}
	return url.PathEscape(id)
}
