package selfbench

import (
	"testing"

	"github.com/usherhq/usher/internal/bench"
)

// TestParseWrk reads wrk's report: rate, total, percentiles in each unit,
// non-2xx answers and socket errors counted as errors (and out of the
// requests); a report without a rate is an error.
func TestParseWrk(t *testing.T) {
	const out = `Running 4s test @ http://127.0.0.1:1234/open
  2 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     2.10ms    1.20ms  30.00ms   90.00%
    Req/Sec    15.00k     1.00k   17.00k    70.00%
  Latency Distribution
     50%  850.00us
     75%    2.00ms
     90%    3.00ms
     99%    1.20s
  120000 requests in 4.00s, 150.00MB read
  Socket errors: connect 0, read 2, write 1, timeout 3
  Non-2xx or 3xx responses: 10
Requests/sec:  29990.50
Transfer/sec:     37.50MB
`
	got, err := parseWrk(out)
	if err != nil {
		t.Fatal(err)
	}
	want := bench.LoadResult{Requests: 120000 - 16, Errors: 16, RPS: 29990.5, P50ms: 0.85, P99ms: 1200}
	if got != want {
		t.Fatalf("parseWrk = %+v, want %+v", got, want)
	}
	if _, err := parseWrk("unable to connect to 127.0.0.1:1 Connection refused\n"); err == nil {
		t.Fatal("a report without a rate: no error")
	}
	if _, err := parseWrk("  1 requests in 1.00s, 1KB read\n     50%  1.0xs\nRequests/sec: 1\n"); err == nil {
		t.Fatal("a latency in no unit: no error")
	}
}
