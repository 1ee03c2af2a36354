package bench

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// The live origin serves Workers requests at a time for their service
// time; the others wait in line, and one that waits Timeout gets 504 and
// takes no worker. Latencies run from arrival to answer.
func TestLiveOriginQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc, err := ParseDist("100ms")
		if err != nil {
			t.Fatal(err)
		}
		o := NewLiveOrigin(OriginModel{Workers: 2, Service: svc, Timeout: 150 * time.Millisecond}, 1)
		start := time.Now()
		codes := make([]int, 5)
		took := make([]time.Duration, 5)
		var wg sync.WaitGroup
		for i := range 5 {
			wg.Go(func() {
				w := httptest.NewRecorder()
				o.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
				codes[i], took[i] = w.Code, time.Since(start)
				if w.Header().Get(HeaderOrigin) != "1" {
					t.Errorf("request %d: no %s header", i, HeaderOrigin)
				}
			})
		}
		wg.Wait()
		var ok100, ok200, busy int
		for i := range 5 {
			switch {
			case codes[i] == http.StatusOK && took[i] == 100*time.Millisecond:
				ok100++
			case codes[i] == http.StatusOK && took[i] == 200*time.Millisecond:
				ok200++
			case codes[i] == http.StatusGatewayTimeout && took[i] == 150*time.Millisecond:
				busy++
			default:
				t.Errorf("request %d: %d after %v", i, codes[i], took[i])
			}
		}
		if ok100 != 2 || ok200 != 2 || busy != 1 {
			t.Fatalf("%d served at once, %d after waiting, %d turned away; want 2, 2, 1", ok100, ok200, busy)
		}
		st := o.Stats(100 * time.Millisecond)
		if st.Requests != 5 || st.Errors != 1 || st.ErrorRate != 0.2 || st.HealthyP99Ms != 100 {
			t.Errorf("stats %+v: want 5 requests, 1 error", st)
		}
		if p := o.Percentile(99); p < 190*time.Millisecond || p > 215*time.Millisecond {
			t.Errorf("p99 %v, want about 200ms (the waiters')", p)
		}
		s := o.Second(start.Add(time.Second), 3, 4, 60, 10)
		if s.T != 0 || s.Requests != 5 || s.Errors != 1 || s.Waiting != 3 || s.Active != 4 || s.Rate != 60 || s.Concurrency != 10 {
			t.Errorf("second %+v", s)
		}
		if s := o.Second(start.Add(2*time.Second), 0, 0, 60, 10); s.T != 1 || s.Requests != 0 {
			t.Errorf("next second %+v: want second 1 with no requests", s)
		}
	})
}
