package bench

// The gate's rounding, mirrored in simulate.go, for simulate_test.go to
// check against internal/web's.
var (
	RefreshSecondsForTest = refreshSeconds
	WaitMinutesForTest    = waitMinutes
	CookieTimesForTest    = cookieTimes
)
