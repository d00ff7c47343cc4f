package api

import (
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Bounds of GET /v1/usage: it sums by reading the sessions and their
// turns, so it reads at most MaxUsageSessions sessions (newest first) and
// lists at most MaxUsageListed of them in its answer; a sum that stopped
// early says so (truncated).
const (
	MaxUsageSessions = 10000
	MaxUsageListed   = 500
)

type usageSum = contracts.UsageSum

// addTurn counts turn x into u.
func addTurn(u *usageSum, x contracts.Submission) {
	if u.Cost == nil {
		u.Cost = map[string]float64{}
	}
	u.Turns++
	u.Usage.InputTokens += x.Usage.InputTokens
	u.Usage.OutputTokens += x.Usage.OutputTokens
	if x.Cost != nil {
		u.Cost[x.Cost.Currency] += x.Cost.Model + x.Cost.Orchestration
		if x.Cost.Orchestration > 0 {
			if u.Orchestration == nil {
				u.Orchestration = map[string]float64{}
			}
			u.Orchestration[x.Cost.Currency] += x.Cost.Orchestration
		}
	}
}

type sessionUsage = contracts.SessionUsage

type usageResponse = contracts.UsageReport

// usage sums the usage and estimated cost of the turns created from from
// to to, both included (GET /v1/usage?principal=&from=&to=, RFC 3339 times; from
// defaults to the beginning, to to now): a principal's own, or, for an
// operator, everyone's or one principal's.
func (s *server) usage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	me := principal(r)
	who := q.Get("principal")
	switch {
	case who == "" && !me.Operator:
		who = me.Name
	case who != "" && who != me.Name && !me.Operator:
		s.fail(w, r, fmt.Errorf("principal=%s: a principal sees only its own usage: %w", quoteClip(who), contracts.ErrPermission))
		return
	}
	from, to := time.Time{}, s.Engine.Clock.Now()
	for _, p := range []struct {
		name string
		into *time.Time
	}{{"from", &from}, {"to", &to}} {
		if v := q.Get(p.name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				s.fail(w, r, fmt.Errorf("%s=%s: want an RFC 3339 time (2026-12-01T00:00:00Z): %w", p.name, quoteClip(v), contracts.ErrInvalid))
				return
			}
			*p.into = t
		}
	}
	if from.After(to) {
		s.fail(w, r, fmt.Errorf("from %s is after to %s: %w", from.Format(time.RFC3339), to.Format(time.RFC3339), contracts.ErrInvalid))
		return
	}
	sessions, err := s.Journal.ListSessions(s.ctx(r), who, MaxUsageSessions+1)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	resp := usageResponse{Principal: who, From: from, To: to, Total: usageSum{Cost: map[string]float64{}}, ByPrincipal: map[string]usageSum{}, Sessions: []sessionUsage{}}
	if len(sessions) > MaxUsageSessions {
		sessions, resp.Truncated = sessions[:MaxUsageSessions], true
	}
	for _, sess := range sessions {
		subs, err := s.Journal.ListSubmissions(s.ctx(r), sess.ID, "", 0)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		su := sessionUsage{ID: sess.ID, Owner: sess.Owner, UsageSum: usageSum{Cost: map[string]float64{}}}
		for _, x := range subs {
			if x.CreatedAt.Before(from) || x.CreatedAt.After(to) {
				continue
			}
			addTurn(&su.UsageSum, x)
			addTurn(&resp.Total, x)
			bp := resp.ByPrincipal[sess.Owner]
			addTurn(&bp, x)
			resp.ByPrincipal[sess.Owner] = bp
		}
		resp.Sessions = append(resp.Sessions, su) // also with no turn in the range: the principal's sessions, each summed
	}
	sort.SliceStable(resp.Sessions, func(i, j int) bool { return total(resp.Sessions[i].Cost) > total(resp.Sessions[j].Cost) })
	if len(resp.Sessions) > MaxUsageListed {
		resp.Sessions, resp.Truncated = resp.Sessions[:MaxUsageListed], true
	}
	writeJSON(w, http.StatusOK, resp)
}

func total(m map[string]float64) float64 {
	var t float64
	for _, v := range m {
		t += v
	}
	return t
}
