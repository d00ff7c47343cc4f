package console

import (
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// The usage page lists the turns of the UsageSessions costliest sessions
// (their first 100 turns each), the costliest MaxUsageTurns of them.
const (
	UsageSessions = 10
	MaxUsageTurns = 100
)

type usageSum = contracts.UsageSum

type usageAnswer = contracts.UsageReport

type principalUsage struct {
	Name string
	usageSum
}

type turnUsage struct {
	Session string
	turnSummary
}

type usageData struct {
	frame
	From, To, Principal string // the form's values
	Answer              usageAnswer
	Principals          []principalUsage
	Turns               []turnUsage
}

// usagePage shows usage and estimated cost (GET /v1/usage?from&to&principal)
// per principal and per session, and per turn for the costliest sessions.
// from and to are RFC 3339 times or dates (YYYY-MM-DD, UTC: to is then the
// end of that day).
func (c *Console) usagePage(w http.ResponseWriter, r *http.Request) {
	me, err := c.whoami(r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	d := &usageData{frame: frame{Title: "Usage", Nav: "usage", Who: me},
		From: strings.TrimSpace(q.Get("from")), To: strings.TrimSpace(q.Get("to")), Principal: strings.TrimSpace(q.Get("principal"))}
	from, to := when(d.From, false), when(d.To, true)
	if err := c.get(r, query("/v1/usage", "from", from, "to", to, "principal", d.Principal), &d.Answer); err != nil {
		c.fail(w, r, err)
		return
	}
	for name, u := range d.Answer.ByPrincipal {
		d.Principals = append(d.Principals, principalUsage{Name: name, usageSum: u})
	}
	sort.Slice(d.Principals, func(i, j int) bool { return d.Principals[i].Name < d.Principals[j].Name })
	for i, s := range d.Answer.Sessions {
		if i == UsageSessions {
			break
		}
		var pg struct {
			Submissions []turnSummary `json:"submissions"`
		}
		if err := c.get(r, query("/v1/sessions/"+seg(s.ID)+"/submissions", "limit", "100"), &pg); err != nil {
			c.fail(w, r, err)
			return
		}
		for _, t := range pg.Submissions {
			if t.CreatedAt.Before(d.Answer.From) || !d.Answer.To.IsZero() && t.CreatedAt.After(d.Answer.To) {
				continue
			}
			d.Turns = append(d.Turns, turnUsage{Session: s.ID, turnSummary: t})
		}
	}
	sort.SliceStable(d.Turns, func(i, j int) bool {
		a, b := d.Turns[i], d.Turns[j]
		if ca, cb := costValue(a.Cost), costValue(b.Cost); ca != cb {
			return ca > cb
		}
		return a.Usage.InputTokens+a.Usage.OutputTokens > b.Usage.InputTokens+b.Usage.OutputTokens
	})
	if len(d.Turns) > MaxUsageTurns {
		d.Turns = d.Turns[:MaxUsageTurns]
	}
	c.render(w, r, http.StatusOK, "usage", d)
}

// when is a form's time as the API takes it: a date is its day's start
// (or, for the end of a range, its last second), in UTC; anything else is
// passed on for the API to check.
func when(v string, end bool) string {
	t, err := time.Parse(time.DateOnly, v)
	if err != nil {
		return v
	}
	if end {
		t = t.Add(24*time.Hour - time.Second)
	}
	return t.Format(time.RFC3339)
}

func costValue(c *contracts.Cost) float64 {
	if c == nil {
		return 0
	}
	return c.Model + c.Orchestration
}
