package schedule_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/workflow/schedule"
)

func date(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestParseRefuses(t *testing.T) {
	tests := []struct {
		expr        string
		want        string // in the message
		unsupported bool
	}{
		{"", "want rate(N unit) or cron(", false},
		{"every 5 minutes", "want rate(N unit)", false},
		{"rate(5)", `want "N minute(s)|hour(s)|day(s)"`, false},
		{"rate(0 minutes)", "below 1 minute", false},
		{"rate(30 seconds)", `unit "seconds"`, false},
		{"rate(-5 minutes)", "positive whole number", false},
		{"rate(+5 minutes)", "positive whole number", false},
		{"rate(1.5 hours)", "positive whole number", false},
		{"rate(1 hours)", `the unit must be "hour"`, false},
		{"rate(5 minute)", `the unit must be "minutes"`, false},
		{"rate(99999999999999 days)", "too long", false},
		{"cron(0 12 * * ?)", "want 6 fields", false},
		{"cron(0 12 * * ? * *)", "want 6 fields", false},
		{"cron(0 12 * * * *)", `exactly one of day-of-month ("*") and day-of-week ("*")`, false},
		{"cron(0 12 ? * ? *)", "exactly one of day-of-month", false},
		{"cron(0 12 1 * MON *)", "exactly one of day-of-month", false},
		{"cron(60 12 * * ? *)", `minutes field, "60": 60 is out of range 0-59`, false},
		{"cron(0 24 * * ? *)", `hours field, "24": 24 is out of range 0-23`, false},
		{"cron(0 12 0 * ? *)", `day-of-month field, "0": 0 is out of range 1-31`, false},
		{"cron(0 12 * 13 ? *)", `month field, "13"`, false},
		{"cron(0 12 * FOO ? *)", `month field, "FOO": "FOO" is not a number 1-12 or a name JAN-DEC`, false},
		{"cron(0 12 ? * 0 *)", `day-of-week field, "0": 0 is out of range 1-7`, false},
		{"cron(0 12 ? * 8 *)", `day-of-week field, "8"`, false},
		{"cron(0 12 * * ? 1969)", `year field, "1969": 1969 is out of range 1970-2199`, false},
		{"cron(0 12 * * ? 2200)", `year field, "2200"`, false},
		{"cron(? 12 * * ? *)", `minutes field, "?": "?" is allowed only in day-of-month and day-of-week`, false},
		{"cron(0 12 *,? * ? *)", `"?" must be the whole field`, false},
		{"cron(1,,2 12 * * ? *)", "empty list item", false},
		{"cron(*/0 12 * * ? *)", `step "0"`, false},
		{"cron(5/ 12 * * ? *)", `step ""`, false},
		{"cron(1/9223372036854775807 * * * ? *)", "step 9223372036854775807 is larger than the field's range 0-59", false},
		{"cron(0 0 ? * 1-7/9223372036854775807 *)", "step 9223372036854775807 is larger", false},
		{"cron(0/99999999999999999999 * * * ? *)", "want a positive whole number", false},
		{"cron(0 12 * * ? *)" + strings.Repeat(" ", 300), "at most 256", false},
		{"rate(5 minutes\xff)", "not valid UTF-8", false},
		{"cron(0 20-4 * * ? *)", "range start 20 is after its end 4", false},
		{"cron(0 12 ? * FRI-MON *)", "range start FRI is after its end MON", false},
		{"cron(0 12 L * ? *)", "day-of-month field, \"L\": the L, W and # wildcards are unsupported", true},
		{"cron(0 12 15W * ? *)", "unsupported", true},
		{"cron(0 12 LW * ? *)", "unsupported", true},
		{"cron(0 12 ? * 6L *)", "day-of-week field, \"6L\"", true},
		{"cron(0 12 ? * FRIL *)", "unsupported", true},
		{"cron(0 12 ? * 3#2 *)", "day-of-week field, \"3#2\"", true},
		{"at(2026-12-01T10:00:00)", "one-time at(…) schedules are unsupported", true},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			_, err := schedule.Parse(tt.expr)
			if err == nil {
				t.Fatalf("Parse(%q) succeeded", tt.expr)
			}
			if !errors.Is(err, contracts.ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
			if got := errors.Is(err, errors.ErrUnsupported); got != tt.unsupported {
				t.Errorf("errors.Is(err, ErrUnsupported) = %v, want %v (%v)", got, tt.unsupported, err)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), fmt.Sprintf("%q", tt.expr)) {
				t.Errorf("error %q: want the expression and %q", err, tt.want)
			}
		})
	}
}

func TestNextCron(t *testing.T) {
	tests := []struct {
		expr  string
		after string
		want  []string // the next firings, in order
	}{
		{"cron(0 12 * * ? *)", "2026-11-29T11:59:59Z", []string{"2026-11-29T12:00:00Z", "2026-11-30T12:00:00Z"}},
		{"cron(0 12 * * ? *)", "2026-11-29T12:00:00Z", []string{"2026-11-30T12:00:00Z"}}, // strictly after
		{"cron(0 12 * * ? *)", "2026-11-29T12:00:00.5Z", []string{"2026-11-30T12:00:00Z"}},
		{"cron(* * * * ? *)", "2026-11-29T12:00:30Z", []string{"2026-11-29T12:01:00Z", "2026-11-29T12:02:00Z"}},
		{"cron(0/15 * * * ? *)", "2026-11-29T12:07:00Z", []string{"2026-11-29T12:15:00Z", "2026-11-29T12:30:00Z", "2026-11-29T12:45:00Z", "2026-11-29T13:00:00Z"}},
		{"cron(*/20 * * * ? *)", "2026-11-29T12:00:00Z", []string{"2026-11-29T12:20:00Z", "2026-11-29T12:40:00Z", "2026-11-29T13:00:00Z"}},
		{"cron(1/10 * * * ? *)", "2026-11-29T12:00:00Z", []string{"2026-11-29T12:01:00Z", "2026-11-29T12:11:00Z"}},
		{"cron(5/1 0 * * ? *)", "2026-11-29T00:58:00Z", []string{"2026-11-29T00:59:00Z", "2026-11-30T00:05:00Z"}},
		{"cron(0 8-10/2 * * ? *)", "2026-11-29T08:00:00Z", []string{"2026-11-29T10:00:00Z", "2026-11-30T08:00:00Z"}},
		{"cron(0,30 9 * * ? *)", "2026-11-29T09:00:00Z", []string{"2026-11-29T09:30:00Z", "2026-11-30T09:00:00Z"}},
		// 2026-11-29 is a Sunday; EventBridge's week runs 1=SUN … 7=SAT.
		{"cron(0 18 ? * MON-FRI *)", "2026-11-28T00:00:00Z", []string{"2026-11-30T18:00:00Z", "2026-12-01T18:00:00Z"}},
		{"cron(0 18 ? * 2-6 *)", "2026-11-28T00:00:00Z", []string{"2026-11-30T18:00:00Z"}},
		{"cron(0 0 ? * 1 *)", "2026-11-28T00:00:00Z", []string{"2026-11-29T00:00:00Z", "2026-12-06T00:00:00Z"}},
		{"cron(0 0 ? * SAT *)", "2026-11-28T00:00:00Z", []string{"2026-12-05T00:00:00Z"}},
		{"cron(0 0 ? * sun,7 *)", "2026-11-28T00:00:00Z", []string{"2026-11-29T00:00:00Z", "2026-12-05T00:00:00Z"}},
		{"cron(0 8 1 * ? *)", "2026-11-29T00:00:00Z", []string{"2026-12-01T08:00:00Z", "2027-01-01T08:00:00Z"}},
		{"cron(0 0 31 * ? *)", "2026-11-29T00:00:00Z", []string{"2026-12-31T00:00:00Z", "2027-01-31T00:00:00Z", "2027-03-31T00:00:00Z"}},
		{"cron(0 0 29 FEB ? *)", "2026-01-01T00:00:00Z", []string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{"cron(0 0 1 JAN,jul ? 2027-2028)", "2026-11-29T00:00:00Z", []string{"2027-01-01T00:00:00Z", "2027-07-01T00:00:00Z", "2028-01-01T00:00:00Z", "2028-07-01T00:00:00Z", ""}},
		{"cron(0 0 1 1 ? 2020)", "2026-11-29T00:00:00Z", []string{""}}, // all past
		{"cron(0 0 30 2 ? *)", "2026-11-29T00:00:00Z", []string{""}},   // never
		{"cron(0 0 1 1 ? *)", "1900-06-01T00:00:00Z", []string{"1970-01-01T00:00:00Z"}},
		{"cron(59 23 31 12 ? 2199)", "2199-12-31T23:58:00Z", []string{"2199-12-31T23:59:00Z", ""}},
		{"  cron(0   12 * * ? *)  ", "2026-11-29T13:00:00Z", []string{"2026-11-30T12:00:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.expr+"/"+tt.after, func(t *testing.T) {
			e, err := schedule.Parse(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := e.Rate(); ok {
				t.Error("a cron expression reports a rate")
			}
			at := date(tt.after)
			for i, w := range tt.want {
				at = e.Next(time.Time{}, at)
				if w == "" {
					if !at.IsZero() {
						t.Fatalf("firing %d: got %s, want none", i, at)
					}
					return
				}
				if !at.Equal(date(w)) || at.Location() != time.UTC {
					t.Fatalf("firing %d: got %s, want %s (UTC)", i, at, w)
				}
			}
		})
	}
}

func TestNextRate(t *testing.T) {
	created := date("2026-11-29T12:00:30.25Z")
	tests := []struct {
		expr  string
		after string
		want  string
	}{
		{"rate(5 minutes)", "2026-11-29T12:00:30.25Z", "2026-11-29T12:05:30.25Z"}, // one period after creation
		{"rate(5 minutes)", "2026-11-29T11:00:00Z", "2026-11-29T12:05:30.25Z"},    // before creation
		{"rate(5 minutes)", "2026-11-29T12:05:30.24Z", "2026-11-29T12:05:30.25Z"},
		{"rate(5 minutes)", "2026-11-29T12:05:30.25Z", "2026-11-29T12:10:30.25Z"}, // strictly after
		{"rate(1 minute)", "2026-11-29T13:00:00Z", "2026-11-29T13:00:30.25Z"},
		{"rate(1 hour)", "2026-11-30T12:00:30Z", "2026-11-30T12:00:30.25Z"},
		{"rate(2 hours)", "2026-11-30T12:00:30.25Z", "2026-11-30T14:00:30.25Z"},
		{"rate(1 day)", "2026-12-01T00:00:00Z", "2026-12-01T12:00:30.25Z"},
		{"rate(7 days)", "2027-11-29T00:00:00Z", "2027-12-05T12:00:30.25Z"}, // 53 weeks on
		{"rate(1 day)", "2400-01-01T00:00:00Z", "2400-01-01T12:00:30.25Z"},  // gaps beyond time.Duration
	}
	for _, tt := range tests {
		t.Run(tt.expr+"/"+tt.after, func(t *testing.T) {
			e, err := schedule.Parse(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			got := e.Next(created, date(tt.after))
			if !got.Equal(date(tt.want)) || got.Location() != time.UTC {
				t.Fatalf("Next = %s, want %s (UTC)", got, tt.want)
			}
		})
	}

	e, _ := schedule.Parse("rate(15 minutes)")
	if p, ok := e.Rate(); !ok || p != 15*time.Minute {
		t.Errorf("Rate() = %v, %v", p, ok)
	}
	// A zero anchor aligns the firings on the Unix epoch.
	if got := e.Next(time.Time{}, date("2026-11-29T12:07:00Z")); !got.Equal(date("2026-11-29T12:15:00Z")) {
		t.Errorf("Next with zero anchor = %s", got)
	}
	if got := (schedule.Expr{}).Next(created, created); !got.IsZero() {
		t.Errorf("zero Expr fires at %s", got)
	}
}

func ExampleParse() {
	e, err := schedule.Parse("cron(0/30 9-17 ? * MON-FRI *)")
	if err != nil {
		fmt.Println(err)
		return
	}
	at := time.Date(2026, 11, 27, 16, 45, 0, 0, time.UTC) // a Friday
	for range 3 {
		at = e.Next(time.Time{}, at)
		fmt.Println(at.Format(time.RFC3339))
	}
	_, err = schedule.Parse("cron(0 12 * * * *)")
	fmt.Println(err)
	// Output:
	// 2026-11-27T17:00:00Z
	// 2026-11-27T17:30:00Z
	// 2026-11-30T09:00:00Z
	// schedule expression "cron(0 12 * * * *)": cron: exactly one of day-of-month ("*") and day-of-week ("*") must be "?": invalid input
}
