package schedule

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Expr is a parsed schedule expression: a rate or a cron expression. The
// zero Expr never fires.
type Expr struct {
	src  string
	rate time.Duration // > 0 for rate(…)
	cron *cronSpec     // non-nil for cron(…)
}

// MaxExpressionBytes bounds an expression (EventBridge Scheduler's own
// limit is 256 characters).
const MaxExpressionBytes = 256

// Parse parses an EventBridge Scheduler expression, "rate(5 minutes)" or
// "cron(0 12 * * ? *)". Errors wrap contracts.ErrInvalid and name the
// expression, the field and the part that is wrong; syntax EventBridge
// accepts but this package does not (L, W, #, at(…)) also wraps
// errors.ErrUnsupported.
func Parse(expr string) (Expr, error) {
	if len(expr) > MaxExpressionBytes {
		shown := expr
		if len(shown) > 4*MaxExpressionBytes {
			shown = shown[:4*MaxExpressionBytes] + "…"
		}
		return Expr{}, fmt.Errorf("schedule expression %q is %d bytes: at most %d: %w", shown, len(expr), MaxExpressionBytes, contracts.ErrInvalid)
	}
	if !utf8.ValidString(expr) {
		return Expr{}, fmt.Errorf("schedule expression %q is not valid UTF-8: %w", expr, contracts.ErrInvalid)
	}
	s := strings.TrimSpace(expr)
	switch {
	case strings.HasPrefix(s, "rate(") && strings.HasSuffix(s, ")"):
		d, err := parseRate(s[len("rate(") : len(s)-1])
		if err != nil {
			return Expr{}, fmt.Errorf("schedule expression %q: %w", expr, err)
		}
		return Expr{src: s, rate: d}, nil
	case strings.HasPrefix(s, "cron(") && strings.HasSuffix(s, ")"):
		c, err := parseCron(s[len("cron(") : len(s)-1])
		if err != nil {
			return Expr{}, fmt.Errorf("schedule expression %q: %w", expr, err)
		}
		return Expr{src: s, cron: c}, nil
	case strings.HasPrefix(s, "at("):
		return Expr{}, fmt.Errorf("schedule expression %q: one-time at(…) schedules are unsupported: %w",
			expr, errors.Join(contracts.ErrInvalid, errors.ErrUnsupported))
	default:
		return Expr{}, fmt.Errorf("schedule expression %q: want rate(N unit) or cron(min hour day-of-month month day-of-week year): %w",
			expr, contracts.ErrInvalid)
	}
}

// String returns the expression as parsed (surrounding space trimmed).
func (e Expr) String() string { return e.src }

// Rate returns the period of a rate expression, and false for a cron
// expression.
func (e Expr) Rate() (time.Duration, bool) { return e.rate, e.rate > 0 }

// Next returns the first firing strictly after after, in UTC, or the zero
// time if there is none (a cron expression whose years are all past, or a
// date that never occurs such as February 30).
//
// Cron expressions are evaluated in UTC and ignore anchor; they fire on
// whole minutes. A rate expression fires at anchor + k·N for k ≥ 1: the
// first firing is one period after anchor, which should be the schedule's
// CreatedAt (a zero anchor means the Unix epoch, so firings fall on the
// multiples of N).
func (e Expr) Next(anchor, after time.Time) time.Time {
	switch {
	case e.rate > 0:
		return nextRate(e.rate, anchor, after)
	case e.cron != nil:
		return e.cron.next(after)
	default:
		return time.Time{}
	}
}

// rate units, singular and plural as EventBridge spells them.
var rateUnits = map[string]time.Duration{
	"minute": time.Minute, "minutes": time.Minute,
	"hour": time.Hour, "hours": time.Hour,
	"day": 24 * time.Hour, "days": 24 * time.Hour,
}

// parseRate parses "N unit". EventBridge wants the singular unit for 1 and
// the plural otherwise; so does this.
func parseRate(body string) (time.Duration, error) {
	parts := strings.Fields(body)
	if len(parts) != 2 {
		return 0, fmt.Errorf("rate: want \"N minute(s)|hour(s)|day(s)\", got %q: %w", body, contracts.ErrInvalid)
	}
	num, unitName := parts[0], parts[1]
	unit, ok := rateUnits[unitName]
	if !ok {
		return 0, fmt.Errorf("rate: unit %q: want minute, minutes, hour, hours, day or days (a rate below 1 minute is refused): %w",
			unitName, contracts.ErrInvalid)
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || num[0] == '+' || num[0] == '-' {
		return 0, fmt.Errorf("rate: value %q: want a positive whole number: %w", num, contracts.ErrInvalid)
	}
	if n < 1 {
		return 0, fmt.Errorf("rate: value %d: a rate below 1 minute is refused: %w", n, contracts.ErrInvalid)
	}
	if plural := strings.HasSuffix(unitName, "s"); plural != (n != 1) {
		want := strings.TrimSuffix(unitName, "s")
		if n != 1 {
			want += "s"
		}
		return 0, fmt.Errorf("rate: %q: with value %d the unit must be %q: %w", body, n, want, contracts.ErrInvalid)
	}
	if n > math.MaxInt64/int64(unit) {
		return 0, fmt.Errorf("rate: value %d %s is too long: %w", n, unitName, contracts.ErrInvalid)
	}
	return time.Duration(n) * unit, nil
}

// nextRate returns anchor + k·p for the least k ≥ 1 with the result after
// after. It works in whole seconds (p is whole minutes) so that gaps longer
// than a time.Duration cannot overflow.
func nextRate(p time.Duration, anchor, after time.Time) time.Time {
	if anchor.IsZero() {
		anchor = time.Unix(0, 0)
	}
	anchor, after = anchor.UTC(), after.UTC()
	ps := int64(p / time.Second)
	k := int64(1)
	if secs := after.Unix() - anchor.Unix(); secs/ps > 1 {
		k = secs / ps // anchor + (k-1)·p < after, so no earlier firing is skipped
	}
	at := func(k int64) time.Time {
		return time.Unix(anchor.Unix()+k*ps, int64(anchor.Nanosecond())).UTC()
	}
	t := at(k)
	for !t.After(after) {
		k++
		t = at(k)
	}
	return t
}
