package console

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/ids"
)

// MaxTimelineEvents bounds the events a turn page reads (the API returns
// at most 500 a page); a longer journal is cut and says so.
const MaxTimelineEvents = 10000

// events reads a turn's journal events from the start (the long-poll
// route with no wait, page after page).
func (c *Console) events(r *http.Request, session, sub string) ([]contracts.Event, bool, error) {
	var all []contracts.Event
	after := int64(0)
	for {
		var pg struct {
			Events []contracts.Event `json:"events"`
			Next   int64             `json:"next"`
			Done   bool              `json:"done"`
		}
		path := query("/v1/sessions/"+seg(session)+"/submissions/"+seg(sub)+"/events", "after", strconv.FormatInt(after, 10))
		if err := c.get(r, path, &pg); err != nil {
			return nil, false, err
		}
		all = append(all, pg.Events...)
		if pg.Done || len(pg.Events) == 0 || pg.Next <= after {
			return all, false, nil
		}
		if len(all) >= MaxTimelineEvents {
			return all, true, nil
		}
		after = pg.Next
	}
}

// entry is one line of a turn's timeline: one journal event, or the
// text_delta events of one model attempt gathered into one.
type entry struct {
	Seq, LastSeq int64
	Type         string
	Step         int
	Attempt      int
	Status       string // a tool event's effect: started, finished, denied, interrupted
	Title        string
	Detail       string
	Tool, CallID string
	ApprovalID   string
	IsError      bool
	Discarded    bool   // text of an abandoned stream attempt (dropped from #stream)
	ChildRun     string // the run a run_workflow call started (workflow "inline")
	At           time.Time
}

// streamText is the text one model attempt streamed (not discarded).
type streamText struct {
	Step, Attempt int
	Text          string
}

// timeline turns a turn's events into its timeline and the text its
// attempts streamed: text_delta events of one (step, attempt) in a row are
// one entry; an attempt a stream_discarded event names is marked discarded
// and its text left out of the stream, as a follower must.
func timeline(evs []contracts.Event) ([]entry, []streamText) {
	type key struct{ step, attempt int }
	discarded := map[key]bool{}
	for _, ev := range evs {
		if ev.Type == contracts.EventStreamDiscarded {
			discarded[key{ev.Step, ev.Attempt}] = true
		}
	}
	var out []entry
	var texts []streamText
	textAt := map[key]int{}
	for _, ev := range evs {
		k := key{ev.Step, ev.Attempt}
		if ev.Type == contracts.EventTextDelta {
			if n := len(out); n > 0 && out[n-1].Type == contracts.EventTextDelta && out[n-1].Step == ev.Step && out[n-1].Attempt == ev.Attempt {
				out[n-1].LastSeq, out[n-1].Detail = ev.Seq, out[n-1].Detail+ev.Text
				out[n-1].Title = streamTitle(out[n-1])
			} else {
				e := entry{Seq: ev.Seq, LastSeq: ev.Seq, Type: ev.Type, Step: ev.Step, Attempt: ev.Attempt, Detail: ev.Text, Discarded: discarded[k], At: ev.At}
				e.Title = streamTitle(e)
				out = append(out, e)
			}
			if !discarded[k] {
				i, ok := textAt[k]
				if !ok {
					i = len(texts)
					textAt[k] = i
					texts = append(texts, streamText{Step: ev.Step, Attempt: ev.Attempt})
				}
				texts[i].Text += ev.Text
			}
			continue
		}
		out = append(out, describe(ev))
	}
	return out, texts
}

func streamTitle(e entry) string {
	s := fmt.Sprintf("Model attempt %d of step %d streamed %s", e.Attempt, e.Step, humanBytes(len(e.Detail)))
	if e.Discarded {
		s += " — discarded (the attempt was abandoned)"
	}
	return s
}

// describe is one event other than text_delta as a timeline entry.
func describe(ev contracts.Event) entry {
	e := entry{Seq: ev.Seq, LastSeq: ev.Seq, Type: ev.Type, Step: ev.Step, Attempt: ev.Attempt, Tool: ev.Tool, CallID: ev.CallID,
		ApprovalID: ev.ApprovalID, IsError: ev.IsError, At: ev.At, Detail: ev.Text}
	switch ev.Type {
	case contracts.EventStep:
		e.Title = fmt.Sprintf("Step %d: the model is called", ev.Step)
		if ev.Text != "" { // the attempt and whose lease it runs under
			e.Title, e.Detail = e.Title+", "+ev.Text, ""
		}
	case contracts.EventStreamDiscarded:
		e.Title = fmt.Sprintf("Attempt %d of step %d abandoned: its streamed text is discarded", ev.Attempt, ev.Step)
	case contracts.EventToolStarted:
		e.Status, e.Title, e.Detail = "started", fmt.Sprintf("Tool %s started (call %s)", ev.Tool, ev.CallID), inputText([]byte(ev.Text))
		if e.Detail == "" {
			e.Detail = ev.Text
		}
		if ev.Tool == "run_workflow" {
			e.ChildRun = ids.ToolRun(ev.SubmissionID, ev.Step, ev.CallID)
		}
	case contracts.EventToolFinished:
		e.Status, e.Title = "finished", fmt.Sprintf("Tool %s finished (call %s)", ev.Tool, ev.CallID)
		if ev.IsError {
			e.Title = fmt.Sprintf("Tool %s finished with an error (call %s)", ev.Tool, ev.CallID)
		}
	case contracts.EventToolDenied:
		e.Status, e.Title = "denied", fmt.Sprintf("Tool %s denied: it never ran (call %s)", ev.Tool, ev.CallID)
	case contracts.EventToolInterrupted:
		e.Status, e.Title = "interrupted", fmt.Sprintf("Tool %s interrupted (call %s)", ev.Tool, ev.CallID)
	case contracts.EventApprovalNeeded:
		e.Title, e.Detail = fmt.Sprintf("Approval needed: %s (call %s)", ev.Tool, ev.CallID), inputText([]byte(ev.Text))
	case contracts.EventApprovalDecided:
		e.Title = "Approval decided: " + ev.Text
		e.Detail = ""
	case contracts.EventCommitted:
		e.Title = "Committed: the turn's answer is in the transcript"
	case contracts.EventFailed:
		e.Title = "Failed"
	case contracts.EventCancelled:
		e.Title = "Cancelled"
	case contracts.EventRetried:
		e.Title = fmt.Sprintf("Retried: resumes at step %d", ev.Step)
	case contracts.EventRepaired:
		e.Title = "Repaired: " + ev.Text
		e.Detail = ""
	default:
		e.Title = ev.Type
	}
	return e
}
