package journaltest

import (
	"reflect"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/conformance/internal/unique"
)

// uniq returns an id prefix unique to this test and this run.
func uniq(t *testing.T) string { return unique.Prefix(t) }

// base is a fixed instant with nanoseconds and a non-UTC offset, to prove
// timestamps round-trip exactly.
var base = time.Date(2031, 5, 6, 7, 8, 9, 123456789, time.FixedZone("X", 2*3600))

func at(sec int) time.Time { return base.Add(time.Duration(sec) * time.Second) }

func utc(t time.Time) time.Time { return t.UTC() }

func normSession(s contracts.Session) contracts.Session {
	s.CreatedAt, s.UpdatedAt = utc(s.CreatedAt), utc(s.UpdatedAt)
	return s
}

func normSubmission(s contracts.Submission) contracts.Submission {
	s.LeaseUntil, s.StartedAt = utc(s.LeaseUntil), utc(s.StartedAt)
	s.CreatedAt, s.UpdatedAt = utc(s.CreatedAt), utc(s.UpdatedAt)
	s.Approvals, s.Decided = normApprovals(s.Approvals), normApprovals(s.Decided)
	return s
}

func normApprovals(as []contracts.Approval) []contracts.Approval {
	if as == nil {
		return nil
	}
	out := make([]contracts.Approval, len(as))
	for i, ap := range as {
		ap.ExpiresAt, ap.DecidedAt = utc(ap.ExpiresAt), utc(ap.DecidedAt)
		out[i] = ap
	}
	return out
}

func equalSession(t *testing.T, what string, got, want contracts.Session) {
	t.Helper()
	if g, w := normSession(got), normSession(want); !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, g, w)
	}
}

func equalSubmission(t *testing.T, what string, got, want contracts.Submission) {
	t.Helper()
	if g, w := normSubmission(got), normSubmission(want); !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, g, w)
	}
}

func newSession(id string) contracts.Session {
	ro := true
	return contracts.Session{
		ID:    id,
		Owner: "owner-1",
		Spec: contracts.SessionSpec{
			Model:  "scripted:demo",
			System: "be brief",
			Tools: []contracts.ToolConfig{
				{Name: "read_file"},
				{Name: "bash", Config: []byte(`{"timeout":5}`), ReadOnly: &ro},
			},
			Policy: contracts.Policy{
				Default: contracts.Ask,
				Tools:   map[string]contracts.Decision{"read_file": contracts.Allow},
				Bash:    []contracts.CommandRule{{Pattern: "rm *", Decision: contracts.Deny}},
			},
			Limits: contracts.Limits{MaxSteps: 8},
		},
		CreatedAt: at(0),
		UpdatedAt: at(1),
	}
}

func newSubmission(id, session, key string, updated time.Time) contracts.Submission {
	return contracts.Submission{
		ID:             id,
		SessionID:      session,
		IdempotencyKey: key,
		Prompt:         "hello " + id,
		Phase:          contracts.PhaseAccepted,
		CreatedAt:      at(0),
		UpdatedAt:      updated,
	}
}

func ids(subs []contracts.Submission, keep func(string) bool) []string {
	var out []string
	for _, s := range subs {
		if keep(s.ID) {
			out = append(out, s.ID)
		}
	}
	return out
}
