package schedule

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Years EventBridge accepts in the year field.
const (
	minYear = 1970
	maxYear = 2199
)

// bitset holds the values a field matches, offset by the field's minimum
// for the year field (so every field fits in 256 bits).
type bitset [4]uint64

func (b *bitset) set(i int) { b[i/64] |= 1 << (i % 64) }

func (b *bitset) has(i int) bool { return i >= 0 && i < 256 && b[i/64]&(1<<(i%64)) != 0 }

// cronSpec is a parsed cron(…) expression. Exactly one of the day fields is
// "?": anyDOM means the day is chosen by day-of-week, else by day-of-month.
type cronSpec struct {
	minute, hour, dom, month, dow, year bitset
	anyDOM                              bool
}

// field describes one cron field: its name in error messages, its range and
// the names it accepts (index = value).
type field struct {
	name     string
	min, max int
	names    []string // names[v] is value v's name ("" when unnamed)
	offset   int      // subtracted before storing in the bitset
	question bool     // "?" allowed (day-of-month, day-of-week)
	special  string   // EventBridge wildcards refused as unsupported
}

var (
	monthNames = []string{"", "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}
	// EventBridge numbers the week 1=SUN … 7=SAT.
	dowNames = []string{"", "SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}

	cronFields = [6]field{
		{name: "minutes", min: 0, max: 59},
		{name: "hours", min: 0, max: 23},
		{name: "day-of-month", min: 1, max: 31, question: true, special: "LW"},
		{name: "month", min: 1, max: 12, names: monthNames},
		{name: "day-of-week", min: 1, max: 7, names: dowNames, question: true, special: "L#"},
		{name: "year", min: minYear, max: maxYear, offset: minYear},
	}
)

// parseCron parses the six fields of a cron expression.
func parseCron(body string) (*cronSpec, error) {
	parts := strings.Fields(body)
	if len(parts) != 6 {
		return nil, fmt.Errorf("cron: want 6 fields (minutes hours day-of-month month day-of-week year), got %d: %w",
			len(parts), contracts.ErrInvalid)
	}
	c := &cronSpec{}
	dst := [6]*bitset{&c.minute, &c.hour, &c.dom, &c.month, &c.dow, &c.year}
	for i, f := range cronFields {
		if err := f.parse(parts[i], dst[i]); err != nil {
			return nil, err
		}
	}
	domQ, dowQ := parts[2] == "?", parts[4] == "?"
	if domQ == dowQ {
		return nil, fmt.Errorf("cron: exactly one of day-of-month (%q) and day-of-week (%q) must be \"?\": %w",
			parts[2], parts[4], contracts.ErrInvalid)
	}
	c.anyDOM = domQ
	return c, nil
}

// parse reads one field: "*", "?", or a comma list of values, ranges a-b
// and steps */n, a/n, a-b/n.
func (f field) parse(s string, dst *bitset) error {
	if s == "?" {
		if !f.question {
			return f.errorf(s, "\"?\" is allowed only in day-of-month and day-of-week")
		}
		return nil // matches any day; the other day field decides
	}
	for _, part := range strings.Split(s, ",") {
		if err := f.parsePart(part, dst); err != nil {
			return err
		}
	}
	return nil
}

func (f field) parsePart(part string, dst *bitset) error {
	if part == "" {
		return f.errorf(part, "empty list item")
	}
	if f.isSpecial(part) {
		return f.unsupported(part)
	}
	rng, step, stepped := part, 1, false
	if i := strings.IndexByte(part, '/'); i >= 0 {
		rng = part[:i]
		n, err := strconv.Atoi(part[i+1:])
		if err != nil || n < 1 || part[i+1] == '+' {
			return f.errorf(part, "step %q: want a positive whole number", part[i+1:])
		}
		if n > f.max-f.min+1 {
			return f.errorf(part, "step %d is larger than the field's range %d-%d", n, f.min, f.max)
		}
		step, stepped = n, true
	}
	lo, hi := f.min, f.max
	switch {
	case rng == "*":
	case rng == "?":
		return f.errorf(part, "\"?\" must be the whole field")
	case strings.Contains(rng, "-"):
		a, b, _ := strings.Cut(rng, "-")
		var err error
		if lo, err = f.value(part, a); err != nil {
			return err
		}
		if hi, err = f.value(part, b); err != nil {
			return err
		}
		if lo > hi {
			return f.errorf(part, "range start %s is after its end %s (wrap-around ranges are refused)", a, b)
		}
	default:
		v, err := f.value(part, rng)
		if err != nil {
			return err
		}
		lo = v
		if !stepped {
			hi = v // a single value; "a/n" runs from a to the field's maximum
		}
	}
	// v+step may not fit an int (a step of 1<<63-1): stop before adding a
	// step that would pass hi, never after.
	for v := lo; ; v += step {
		dst.set(v - f.offset)
		if hi-v < step {
			break
		}
	}
	return nil
}

// isSpecial reports whether part uses one of EventBridge's L, W or #
// wildcards that this field knows: "L", "LW", "15W", "5L", "FRIL", "3#2".
func (f field) isSpecial(part string) bool {
	if f.special == "" {
		return false
	}
	p := strings.ToUpper(part)
	if p == "L" || p == "LW" || strings.HasPrefix(p, "L-") {
		return true
	}
	if strings.Contains(f.special, "#") && strings.Contains(p, "#") {
		return true
	}
	for _, w := range f.special {
		if w == '#' {
			continue
		}
		if base, ok := strings.CutSuffix(p, string(w)); ok && base != "" {
			if _, err := strconv.Atoi(base); err == nil || f.lookup(base) >= 0 {
				return true
			}
		}
	}
	return false
}

// value reads a number or a name of the field.
func (f field) value(part, s string) (int, error) {
	if v := f.lookup(s); v >= 0 {
		return v, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || s == "" || s[0] == '+' || s[0] == '-' {
		if f.names != nil {
			return 0, f.errorf(part, "%q is not a number %d-%d or a name %s-%s", s, f.min, f.max, f.names[f.min], f.names[f.max])
		}
		return 0, f.errorf(part, "%q is not a number %d-%d", s, f.min, f.max)
	}
	if v < f.min || v > f.max {
		return 0, f.errorf(part, "%d is out of range %d-%d", v, f.min, f.max)
	}
	return v, nil
}

// lookup returns the value a name stands for (case-insensitive), or -1.
func (f field) lookup(s string) int {
	for v, n := range f.names {
		if n != "" && strings.EqualFold(n, s) {
			return v
		}
	}
	return -1
}

func (f field) errorf(part, format string, args ...any) error {
	return fmt.Errorf("cron %s field, %q: %s: %w", f.name, part, fmt.Sprintf(format, args...), contracts.ErrInvalid)
}

func (f field) unsupported(part string) error {
	return fmt.Errorf("cron %s field, %q: the L, W and # wildcards are unsupported: %w",
		f.name, part, errors.Join(contracts.ErrInvalid, errors.ErrUnsupported))
}

// next returns the first whole minute strictly after after that matches,
// or the zero time when none does up to the end of year 2199.
func (c *cronSpec) next(after time.Time) time.Time {
	t := after.UTC().Truncate(time.Minute).Add(time.Minute)
	if t.Year() < minYear {
		t = time.Date(minYear, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	for t.Year() <= maxYear {
		y, m, d := t.Date()
		switch {
		case !c.year.has(y - minYear):
			t = time.Date(y+1, 1, 1, 0, 0, 0, 0, time.UTC)
		case !c.month.has(int(m)):
			t = time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC)
		case !c.dayMatches(t):
			t = time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
		case !c.hour.has(t.Hour()):
			t = t.Truncate(time.Hour).Add(time.Hour)
		case !c.minute.has(t.Minute()):
			t = t.Add(time.Minute)
		default:
			return t
		}
	}
	return time.Time{}
}

func (c *cronSpec) dayMatches(t time.Time) bool {
	if c.anyDOM {
		return c.dow.has(int(t.Weekday()) + 1) // time.Sunday = 0; EventBridge SUN = 1
	}
	return c.dom.has(t.Day())
}
