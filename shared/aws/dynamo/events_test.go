package dynamo

import (
	"strings"
	"sync"
	"testing"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/awstest"
	"github.com/cairnrun/cairn/shared/testkit/faultproxy"
)

// A text_delta is stored at EVS#<seq> without the LSI key (its text is
// written once), a keyed event at EVT#<key> with it; ListEvents lists both
// in seq order.
func TestTextDeltasTakeNoLSIEntry(t *testing.T) {
	e := env(t)
	s := e.store(t, Options{})
	ctx := awstest.Context(t)
	p := uniq(t)
	if err := s.AppendEvents(ctx,
		contracts.Event{SubmissionID: p, Key: "step/0", Type: contracts.EventStep, At: t0},
		contracts.Event{SubmissionID: p, Key: "text/st/0", Type: contracts.EventTextDelta, Text: "hel", At: t0},
		contracts.Event{SubmissionID: p, Key: "text/st/1", Type: contracts.EventTextDelta, Text: "lo", At: t0},
		contracts.Event{SubmissionID: p, Key: "committed", Type: contracts.EventCommitted, At: t0},
	); err != nil {
		t.Fatal(err)
	}
	got, err := s.ListEvents(ctx, p, 0, 0)
	if err != nil || len(got) != 4 {
		t.Fatalf("ListEvents = %+v, %v; want 4", got, err)
	}
	for i, want := range []string{"step/0", "text/st/0", "text/st/1", "committed"} {
		if got[i].Key != want || i > 0 && got[i].Seq <= got[i-1].Seq {
			t.Fatalf("ListEvents[%d] = %s (seq %d), want %s in seq order: %+v", i, got[i].Key, got[i].Seq, want, got)
		}
	}
	delta := raw(t, e, submissionPK(p), deltaSK(got[1].Seq))
	if delta == nil || delta[attrLSK] != nil || getS(delta, attrEventKey) != "text/st/0" {
		t.Errorf("text_delta item = %v; want one at %s with its key and no %s", delta, deltaSK(got[1].Seq), attrLSK)
	}
	if keyed := raw(t, e, submissionPK(p), eventPrefix+"step/0"); getS(keyed, attrLSK) != eventLSK(got[0].Seq) {
		t.Errorf("keyed event item = %v; want %s = %s", keyed, attrLSK, eventLSK(got[0].Seq))
	}
	if page, err := s.ListEvents(ctx, p, got[0].Seq, 2); err != nil || len(page) != 2 || page[0].Key != "text/st/0" || page[1].Key != "text/st/1" {
		t.Errorf("ListEvents(after step/0, limit 2) = %+v, %v", page, err)
	}
}

// ListEvents reads the text_deltas, then the keyed events. Text committed
// between the two Queries, followed by a keyed event the second one sees,
// is still listed: a follower that moved its cursor past the keyed event
// would never see that text otherwise.
func TestListEventsSeesTextCommittedBetweenItsQueries(t *testing.T) {
	e := env(t)
	writer := e.store(t, Options{})
	ctx := awstest.Context(t)
	p := uniq(t)
	if err := writer.AppendEvents(ctx, contracts.Event{SubmissionID: p, Key: "text/st/0", Type: contracts.EventTextDelta, Text: "hel", At: t0}); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	reader, _ := e.faulty(t, Options{}, func(r faultproxy.Request) faultproxy.Action {
		if r.Op == "Query" && strings.Contains(string(r.Body), `"IndexName":"`+LSI+`"`) {
			once.Do(func() { // before the keyed events' Query reaches the table
				for _, ev := range []contracts.Event{
					{SubmissionID: p, Key: "text/st/1", Type: contracts.EventTextDelta, Text: "lo", At: t0},
					{SubmissionID: p, Key: "committed", Type: contracts.EventCommitted, At: t0},
				} {
					if err := writer.AppendEvents(ctx, ev); err != nil {
						t.Error(err)
					}
				}
			})
		}
		return faultproxy.Pass
	}, 0)
	got, err := reader.ListEvents(ctx, p, 0, 0)
	var keys []string
	for _, ev := range got {
		keys = append(keys, ev.Key)
	}
	if err != nil || strings.Join(keys, " ") != "text/st/0 text/st/1 committed" {
		t.Fatalf("ListEvents = %v, %v; want text/st/0 text/st/1 committed", keys, err)
	}
}
