package console

import (
	"net/http"

	"github.com/cairnrun/cairn/shared/contracts"
)

// MaxApprovalSessions bounds the sessions the approvals page reads; only
// those with an active turn can have a pending approval, and only those are
// asked for theirs.
const MaxApprovalSessions = 1000

type approvalsData struct {
	frame
	Forms []approvalForm
	Cut   bool // more sessions than MaxApprovalSessions
}

// approvalsPage lists every pending approval in the principal's own
// sessions (for an operator too: only a session's owner may decide), the
// newest session first.
func (c *Console) approvalsPage(w http.ResponseWriter, r *http.Request) {
	me, err := c.whoami(r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	d := &approvalsData{frame: frame{Title: "Approvals", Nav: "approvals", Who: me}}
	read, cursor := 0, ""
	for {
		var pg struct {
			Sessions []sessionSummary `json:"sessions"`
			Next     string           `json:"next_cursor"`
		}
		if err := c.get(r, query("/v1/sessions", "limit", "100", "cursor", cursor), &pg); err != nil {
			c.fail(w, r, err)
			return
		}
		for _, s := range pg.Sessions {
			if s.Active == "" || s.Owner != me.Name {
				continue
			}
			var ap struct {
				Approvals []contracts.Approval `json:"approvals"`
			}
			if err := c.get(r, query("/v1/sessions/"+seg(s.ID)+"/approvals", "limit", "100"), &ap); err != nil {
				if notFound(err) {
					continue // gone since it was listed
				}
				c.fail(w, r, err)
				return
			}
			for _, a := range ap.Approvals {
				d.Forms = append(d.Forms, newApprovalForm(s.ID, s.Active, a, Prefix+"approvals"))
			}
		}
		read += len(pg.Sessions)
		if cursor = pg.Next; cursor == "" {
			break
		}
		if read >= MaxApprovalSessions {
			d.Cut = true
			break
		}
	}
	c.render(w, r, http.StatusOK, "approvals", d)
}
