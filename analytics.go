package usher

import "time"

// Analytics retention: a room's minute points are kept for
// AnalyticsMinuteKeep and its hour points (the same counts rolled up) for
// AnalyticsHourKeep; older points are dropped by the store.
const (
	AnalyticsMinuteKeep = 24 * time.Hour
	AnalyticsHourKeep   = 30 * 24 * time.Hour
	// AnalyticsMaxFields bounds the fields of one point: a delta that
	// would make a point hold more is refused (EInvalid).
	AnalyticsMaxFields = 1024
)

// AnalyticsDelta is what one node counted in one minute of a room since
// its last flush. Field names are short ASCII words chosen by the
// analytics package; the store does not interpret them.
type AnalyticsDelta struct {
	// Minute is the start of the minute (whole minute, UTC).
	Minute time.Time
	// Add holds counts the store adds to the point's (arrivals, histogram
	// buckets): nodes' counts add up.
	Add map[string]int64
	// Max holds levels the store keeps the largest of (peak waiting): the
	// peak across nodes.
	Max map[string]int64
}

// AnalyticsPoint is a room's analytics over one step (a minute or an
// hour), merged across nodes.
type AnalyticsPoint struct {
	// Start is the start of the step.
	Start time.Time
	// Add and Max are the merged fields (see AnalyticsDelta).
	Add map[string]int64
	Max map[string]int64
}

// Check reports why d cannot be merged: a minute that is not whole, a
// field name that is empty, longer than 32 bytes or not made of letters,
// digits and '_', or a negative count.
func (d *AnalyticsDelta) Check() error {
	if d.Minute.IsZero() || d.Minute.Truncate(time.Minute) != d.Minute || d.Minute.Nanosecond() != 0 {
		return Errorf(EInvalid, "analytics: minute %v is not a whole minute", d.Minute)
	}
	for _, m := range []map[string]int64{d.Add, d.Max} {
		for k, v := range m {
			if !analyticsName(k) {
				return Errorf(EInvalid, "analytics: field name %.40q", k)
			}
			if v < 0 {
				return Errorf(EInvalid, "analytics: field %s: negative value %d", k, v)
			}
		}
	}
	if len(d.Add)+len(d.Max) > AnalyticsMaxFields {
		return Errorf(EInvalid, "analytics: %d fields, at most %d", len(d.Add)+len(d.Max), AnalyticsMaxFields)
	}
	return nil
}

func analyticsName(k string) bool {
	if k == "" || len(k) > 32 {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
