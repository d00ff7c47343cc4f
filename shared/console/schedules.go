package console

import (
	"net/http"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/workflow/schedule"
)

type scheduleRow struct {
	contracts.Schedule
	Next    time.Time // the next firing by the expression ("" when paused)
	Last    time.Time // the newest run it started, among its workflow's newest runs
	LastRun string
}

type schedulesData struct {
	frame
	Rows []scheduleRow
	More string
}

// schedulesPage lists the principal's schedules (an operator's:
// everyone's): expression, state, owner, the next firing as the
// expression computes it (UTC; EventBridge picks its own phase for a
// rate) and the last run it started, if one is among its workflow's 20
// newest runs.
func (c *Console) schedulesPage(w http.ResponseWriter, r *http.Request) {
	me, err := c.whoami(r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	d := &schedulesData{frame: frame{Title: "Schedules", Nav: "schedules", Who: me}}
	var pg struct {
		Schedules []contracts.Schedule `json:"schedules"`
		Next      string               `json:"next_cursor"`
	}
	if err := c.get(r, query("/v1/schedules", "limit", "50", "cursor", r.URL.Query().Get("cursor")), &pg); err != nil {
		c.fail(w, r, err)
		return
	}
	runs := map[string][]runSummary{} // by workflow
	now := c.now()
	for _, sc := range pg.Schedules {
		row := scheduleRow{Schedule: sc}
		if e, err := schedule.Parse(sc.Expression); err == nil && !sc.Paused {
			row.Next = e.Next(sc.CreatedAt, now)
		}
		list, ok := runs[sc.WorkflowID]
		if !ok {
			var rp runsPage
			if err := c.get(r, query("/v1/workflows/"+seg(sc.WorkflowID)+"/runs", "limit", "20"), &rp); err != nil && !notFound(err) {
				c.fail(w, r, err)
				return
			}
			list, runs[sc.WorkflowID] = rp.Runs, rp.Runs
		}
		for _, run := range list {
			if run.ScheduleID == sc.ID {
				row.Last, row.LastRun = run.ScheduledAt, run.ID
				if row.Last.IsZero() {
					row.Last = run.StartedAt
				}
				break
			}
		}
		d.Rows = append(d.Rows, row)
	}
	if pg.Next != "" {
		d.More = query(Prefix+"schedules", "cursor", pg.Next)
	}
	c.render(w, r, http.StatusOK, "schedules", d)
}

// scheduleAction pauses or resumes a schedule (POST
// …/schedules/{sch}/pause|resume) and returns to the schedules page.
func (c *Console) scheduleAction(w http.ResponseWriter, r *http.Request) {
	action := r.PathValue("action")
	if action != "pause" && action != "resume" {
		c.errorPage(w, r, http.StatusNotFound, "not_found", "A schedule can be paused or resumed here, not "+clip(action, 40)+".")
		return
	}
	path := "/v1/workflows/" + seg(r.PathValue("wid")) + "/schedules/" + seg(r.PathValue("sch")) + "/" + action
	if err := c.call(r, http.MethodPost, path, nil, nil); err != nil {
		c.fail(w, r, err)
		return
	}
	redirect(w, r, back(r, Prefix+"schedules"))
}
