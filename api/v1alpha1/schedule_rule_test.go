package v1alpha1_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/raftsman/raftsman/pkg/schedule"
)

// The cron rule's regex is built here rather than written by hand: it has to
// refuse a range whose start is after its end ("5-1"), as robfig/cron does,
// and a regex can only do that by listing each start with the ends it
// allows.

// cronNumber matches the integer v; a one-digit v also with a leading zero.
func cronNumber(v int) string {
	if v < 10 {
		return fmt.Sprintf("0?%d", v)
	}
	return fmt.Sprint(v)
}

// cronInterval matches the integers in [lo, hi] (hi < 100).
func cronInterval(lo, hi int) string {
	var alts []string
	if lo <= 9 {
		switch h := min(hi, 9); {
		case lo == h:
			alts = append(alts, fmt.Sprintf("0?%d", lo))
		default:
			alts = append(alts, fmt.Sprintf("0?[%d-%d]", lo, h))
		}
	}
	// tens: a partial first decade, full decades as one class, a partial
	// last decade
	for t := max(1, lo/10); t*10 <= hi; {
		a, b := max(lo, t*10), min(hi, t*10+9)
		if a == t*10 && b == t*10+9 {
			u := t
			for (u+1)*10+9 <= hi {
				u++
			}
			if u == t {
				alts = append(alts, fmt.Sprintf("%d[0-9]", t))
			} else {
				alts = append(alts, fmt.Sprintf("[%d-%d][0-9]", t, u))
			}
			t = u + 1
			continue
		}
		switch {
		case a == b:
			alts = append(alts, fmt.Sprint(a))
		default:
			alts = append(alts, fmt.Sprintf("%d[%d-%d]", t, a%10, b%10))
		}
		t++
	}
	if len(alts) == 1 {
		return alts[0]
	}
	return "(" + strings.Join(alts, "|") + ")"
}

// cronField matches one field of lo..hi: a comma-separated list of *, ?, a
// value or an ordered range, each with an optional step of 1 to 99. names,
// in order from lo, are the field's names (case-insensitive); a range is of
// numbers or of names, not both.
func cronField(lo, hi int, names []string) string {
	single := cronInterval(lo, hi)
	var ranges []string
	for a := lo; a < hi; a++ {
		ranges = append(ranges, cronNumber(a)+"-"+cronInterval(a, hi))
	}
	if names != nil {
		single = "(" + single + "|(?i:" + strings.Join(names, "|") + "))"
		var named []string
		for i := 0; i < len(names)-1; i++ {
			named = append(named, names[i]+"-("+strings.Join(names[i:], "|")+")")
		}
		ranges = append(ranges, "(?i:"+strings.Join(named, "|")+")")
	}
	item := "([*?]|" + single + "|" + strings.Join(ranges, "|") + ")(/[1-9][0-9]?)?"
	return item + "(," + item + ")*"
}

// cronRegex is what the CRD's rule on spec.backup.schedule matches.
func cronRegex() string {
	months := []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
	days := []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
	fields := strings.Join([]string{
		cronField(0, 59, nil), cronField(0, 23, nil), cronField(1, 31, nil), cronField(1, 12, months), cronField(0, 6, days),
	}, " +")
	every := "@every ([0-9]{1,6}h([0-9]{1,7}m)?([0-9]{1,9}s)?|[0-9]{1,7}m([0-9]{1,9}s)?|[0-9]{1,9}s)"
	return "^((CRON_TZ|TZ)=UTC )?(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|" + every + "|" + fields + ")$"
}

// scheduleRegex is the regex of the CRD's rule on spec.backup.schedule.
func scheduleRegex(t *testing.T) string {
	t.Helper()
	s := schemaAt(t, readCRD(t, "etcdclusters"), "spec", "backup", "schedule")
	lits := celStrings(t, ruleWith(t, s, "must be a cron expression"))
	if len(lits) != 1 {
		t.Fatalf("want one string in the schedule rule, found %q", lits)
	}
	return lits[0]
}

func TestScheduleRegexIsGenerated(t *testing.T) {
	t.Parallel()
	if got, want := scheduleRegex(t), cronRegex(); got != want {
		t.Errorf("the CRD's schedule regex is not cronRegex(): put this in the marker on CronSchedule and run make manifests:\n%s", want)
	}
}

// TestScheduleRegexAgreesWithParser: what the CRD accepts, the operator's
// parser accepts. The regex is stricter than the parser in places (one
// time zone, no mixed number and name ranges, steps up to 99); the valid
// table says which forms it must accept.
func TestScheduleRegexAgreesWithParser(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(scheduleRegex(t))
	valid := []string{
		"* * * * *", "*/1 * * * *", "*/15 * * * *", "0 3 * * *", "30 9 * * 1-5", "0 0 1 * *",
		"15,45 */2 1-15 1,6 MON-FRI", "0 0 * * sun", "0 0 * jan-dec sat", "0 0 ? * ?", "05 04 * * *",
		"59 23 31 12 6", "0-59/10 0-23 1-31 1-12 0-6", "0 0 1 jan,jul *", "1,2,3 * * * *", "0 9-17/2 * * mon-fri",
		"0   3  * * *",
		"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly",
		"@every 1m", "@every 5m", "@every 1h30m", "@every 24h", "@every 90s", "@every 1h0m0s",
		"CRON_TZ=UTC 0 * * * *", "TZ=UTC 0 3 * * *", "CRON_TZ=UTC @daily", "CRON_TZ=UTC @every 6h",
	}
	invalid := []string{
		"", " ", "60 * * * *", "* 24 * * *", "* * 0 * *", "* * 32 * *", "* * * 0 *", "* * * 13 *", "* * * * 7",
		"* * * *", "* * * * * *", "0 0 * * * *", "5-1 * * * *", "* * * dec-jan *", "* * * * sat-sun",
		"*/0 * * * *", "1-/2 * * * *", "1,,2 * * * *", ",1 * * * *", "1, * * * *", "a * * * *", "* * * * monday",
		"* * * jan * extra", "@every 7d", "@every", "@every ", "@every 99999999999h", "@every 1.5x", "@fortnightly",
		"@Daily", "every day", "daily", "CRON_TZ=Mars/Olympus 0 * * * *", "CRON_TZ=UTC", "TZ=UTC\t0 * * * *",
		" 0 * * * *", "0 * * * * ", "0\t* * * *", "-1 * * * *", "1-2-3 * * * *", "*/5/5 * * * *",
	}
	for _, s := range valid {
		if !re.MatchString(s) {
			t.Errorf("the regex refuses %q", s)
		}
		if _, err := schedule.Parse(s); err != nil {
			t.Errorf("the table says %q is valid, the parser says %v", s, err)
		}
	}
	for _, s := range invalid {
		if re.MatchString(s) {
			t.Errorf("the regex accepts %q", s)
		}
	}

	// Every token of each field, alone and in lists, inside an otherwise
	// valid expression: whatever the regex accepts must parse.
	tokens := func(lo, hi int, names []string) []string {
		var vals []string
		for v := lo - 1; v <= hi+1; v++ {
			vals = append(vals, fmt.Sprint(v), fmt.Sprintf("%02d", v))
		}
		vals = append(vals, names...)
		vals = append(vals, strings.ToUpper(strings.Join(names, ",")), "*", "?", "", "x")
		var out []string
		for _, a := range vals {
			out = append(out, a)
			for _, step := range []string{"/0", "/1", "/2", "/7", "/60", "/99", "/100", "/", "/x"} {
				out = append(out, a+step)
			}
			for _, b := range vals {
				out = append(out, a+"-"+b, a+"-"+b+"/3", a+"-"+b+"/0")
			}
		}
		return out
	}
	months := []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
	days := []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
	fields := [][]string{tokens(0, 59, nil), tokens(0, 23, nil), tokens(1, 31, nil), tokens(1, 12, months), tokens(0, 6, days)}
	checked := 0
	for i, toks := range fields {
		for j, tok := range toks {
			for _, item := range []string{tok, tok + "," + toks[(j*7)%len(toks)]} {
				expr := []string{"0", "0", "1", "1", "0"}
				expr[i] = item
				s := strings.Join(expr, " ")
				if !re.MatchString(s) {
					continue
				}
				checked++
				if _, err := schedule.Parse(s); err != nil {
					t.Errorf("the regex accepts %q, the parser refuses it: %v", s, err)
				}
			}
		}
	}
	if checked < 1000 {
		t.Errorf("only %d accepted expressions checked against the parser", checked)
	}

	// @every with durations the regex accepts at its limits.
	for _, d := range []string{"999999h9999999m999999999s", "9999999m999999999s", "999999999s", "1s"} {
		s := "@every " + d
		if !re.MatchString(s) {
			t.Errorf("the regex refuses %q", s)
		}
		if _, err := schedule.Parse(s); err != nil {
			t.Errorf("the regex accepts %q, the parser refuses it: %v", s, err)
		}
		if _, err := time.ParseDuration(d); err != nil {
			t.Errorf("%q: %v", d, err)
		}
	}
}

// TestDurationPatternAgreesWithGo: the pattern of the duration fields
// accepts only what time.ParseDuration accepts, but for values too large
// for a time.Duration, which the CEL rule next to it refuses (duration()
// in CEL refuses them as Go does).
func TestDurationPatternAgreesWithGo(t *testing.T) {
	t.Parallel()
	crd := readCRD(t, "etcdclusters")
	for _, path := range [][]string{
		{"spec", "backup", "retention", "maxAge"},
		{"spec", "tls", "certificateLifetime"},
		{"spec", "tls", "renewBefore"},
	} {
		s := schemaAt(t, crd, path...)
		re := regexp.MustCompile(s.Pattern)
		ruleWith(t, s, strings.Join(path, ".")+" must be a duration")
		for _, d := range []string{"168h", "1h30m", "1.5h", "90s", "100ms", "0s", "1h0m0s", "2562047h"} {
			if !re.MatchString(d) {
				t.Errorf("%s: the pattern refuses %q", strings.Join(path, "."), d)
			}
		}
		for _, d := range []string{"7d", "1w", "", "h", "1", "-1h", "1h ", " 1h", "1.h", ".5h", "1e3s", "1H", "1µs", "forever", "1y"} {
			if re.MatchString(d) {
				t.Errorf("%s: the pattern accepts %q", strings.Join(path, "."), d)
			}
		}
		// The pattern cannot bound the sum: these pass it and only the
		// CEL rule refuses them, as Go does.
		for _, d := range []string{"99999999999h", "2562048h", "2562047h60m"} {
			if _, err := time.ParseDuration(d); !re.MatchString(d) || err == nil {
				t.Errorf("%s: %q: want it to pass the pattern and Go to refuse it (err %v)", strings.Join(path, "."), d, err)
			}
		}
	}
}
