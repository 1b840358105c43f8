package decide

// This file reads maintenance windows: when one is open, and when the next one opens.

import (
	"fmt"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

var weekdays = map[v1alpha1.Weekday]time.Weekday{
	"Sun": time.Sunday, "Mon": time.Monday, "Tue": time.Tuesday, "Wed": time.Wednesday,
	"Thu": time.Thursday, "Fri": time.Friday, "Sat": time.Saturday,
}

// WindowState is where now stands among a set of maintenance windows.
type WindowState struct {
	// Open is true while one of them is open.
	Open bool
	// Next is when the next one opens after now; zero when there are none.
	Next time.Time
}

// Windows says where now stands among windows. It fails on a window whose start, duration or time
// zone cannot be read; admission refuses all but an unknown time zone.
func Windows(windows []v1alpha1.MaintenanceWindow, now time.Time) (WindowState, error) {
	var st WindowState
	for _, w := range windows {
		loc, start, err := readWindow(w)
		if err != nil {
			return WindowState{}, err
		}
		local := now.In(loc)
		// A window that opened yesterday may still be open; the next to open is at most a week off.
		for day := -1; day <= 7; day++ {
			d := local.AddDate(0, 0, day)
			if !onDay(w.Days, d.Weekday()) {
				continue
			}
			open := time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, loc).Add(start)
			if !now.Before(open) && now.Before(open.Add(w.Duration.Duration)) {
				st.Open = true
			}
			if open.After(now) && (st.Next.IsZero() || open.Before(st.Next)) {
				st.Next = open
			}
		}
	}
	return st, nil
}

func readWindow(w v1alpha1.MaintenanceWindow) (*time.Location, time.Duration, error) {
	zone := w.TimeZone
	if zone == "" {
		zone = "UTC"
	}
	loc, err := location(zone)
	if err != nil {
		return nil, 0, fmt.Errorf("maintenance window time zone %q is not a known IANA time zone (such as Europe/Berlin or UTC)", w.TimeZone)
	}
	var h, m int
	if _, err := fmt.Sscanf(w.Start, "%d:%d", &h, &m); err != nil || h < 0 || h > 23 || m < 0 || m > 59 {
		return nil, 0, fmt.Errorf("maintenance window start %q is not a time of day HH:MM", w.Start)
	}
	if w.Duration.Duration < time.Minute || w.Duration.Duration > 24*time.Hour {
		return nil, 0, fmt.Errorf("maintenance window duration %s is not from 1m to 24h", w.Duration.Duration)
	}
	return loc, time.Duration(h)*time.Hour + time.Duration(m)*time.Minute, nil
}

// locations caches the time zones read: LoadLocation reads the time zone database each time, and
// every sync of every target of a ScratchVolume with windows asks.
var locations sync.Map

func location(zone string) (*time.Location, error) {
	if loc, ok := locations.Load(zone); ok {
		return loc.(*time.Location), nil
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return nil, err
	}
	locations.Store(zone, loc)
	return loc, nil
}

func onDay(days []v1alpha1.Weekday, d time.Weekday) bool {
	if len(days) == 0 {
		return true
	}
	for _, day := range days {
		if weekdays[day] == d {
			return true
		}
	}
	return false
}

// ParseWindow reads a maintenance window written as the manager's --maintenance-window flag takes
// it: "[DAYS ]HH:MM+DURATION[ TIMEZONE]", such as "Sat,Sun 02:00+3h Europe/Berlin" or "01:30+90m".
func ParseWindow(s string) (v1alpha1.MaintenanceWindow, error) {
	var w v1alpha1.MaintenanceWindow
	fields := strings.Fields(s)
	if len(fields) > 0 && !strings.Contains(fields[0], ":") {
		for _, d := range strings.Split(fields[0], ",") {
			if _, ok := weekdays[v1alpha1.Weekday(d)]; !ok {
				return w, fmt.Errorf("maintenance window %q: %q is not a day (Mon, Tue, Wed, Thu, Fri, Sat or Sun)", s, d)
			}
			w.Days = append(w.Days, v1alpha1.Weekday(d))
		}
		fields = fields[1:]
	}
	if len(fields) == 0 || len(fields) > 2 {
		return w, fmt.Errorf("maintenance window %q is not \"[DAYS ]HH:MM+DURATION[ TIMEZONE]\", such as \"Sat,Sun 02:00+3h Europe/Berlin\"", s)
	}
	start, dur, ok := strings.Cut(fields[0], "+")
	if !ok {
		return w, fmt.Errorf("maintenance window %q: %q lacks +DURATION, such as 02:00+3h", s, fields[0])
	}
	d, err := time.ParseDuration(dur)
	if err != nil {
		return w, fmt.Errorf("maintenance window %q: duration %q: %w", s, dur, err)
	}
	w.Start, w.Duration = start, metav1.Duration{Duration: d}
	if len(fields) == 2 {
		w.TimeZone = fields[1]
	}
	if _, _, err := readWindow(w); err != nil {
		return w, fmt.Errorf("maintenance window %q: %w", s, err)
	}
	return w, nil
}

// DescribeWindows is a short account of windows for a message: "Sat,Sun 02:00+3h0m0s Europe/Berlin".
func DescribeWindows(windows []v1alpha1.MaintenanceWindow) string {
	parts := make([]string, 0, len(windows))
	for _, w := range windows {
		s := w.Start + "+" + w.Duration.Duration.String()
		if len(w.Days) > 0 {
			days := make([]string, len(w.Days))
			for i, d := range w.Days {
				days[i] = string(d)
			}
			s = strings.Join(days, ",") + " " + s
		}
		if w.TimeZone != "" {
			s += " " + w.TimeZone
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}
