package rules

import (
	"net/http"
	"net/netip"
	"testing"
)

// benchRules are five typical rules, none of which matches benchRequest, so
// every rule runs.
var benchRules = []Rule{
	{Description: "office", Expression: `ip.in_ip_list("office") && method == "GET"`, Enabled: true},
	{Description: "admin", Expression: `path.startsWith("/admin")`, Enabled: true},
	{Description: "app", Expression: `headers["x-mobile-app"] == "tickets"`, Enabled: true},
	{Description: "countries", Expression: `country in ["NZ", "AU"]`, Enabled: true},
	{Description: "monitoring", Expression: `user_agent.contains("Pingdom") || ip.in_cidr("10.0.0.0/8")`, Enabled: true},
}

var benchLists = map[string][]netip.Prefix{
	"office": {netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("2001:db8::/32")},
}

func benchRequest() *Request {
	h := http.Header{}
	for _, kv := range [][2]string{
		{"Accept", "text/html,application/xhtml+xml"},
		{"Accept-Encoding", "gzip, deflate, br"},
		{"Accept-Language", "en-NZ,en;q=0.9"},
		{"Cookie", "session=abc; theme=dark"},
		{"User-Agent", "Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/128.0"},
		{"Referer", "https://tickets.example.com/"},
		{"Sec-Fetch-Mode", "navigate"},
		{"Upgrade-Insecure-Requests", "1"},
	} {
		h.Set(kv[0], kv[1])
	}
	return &Request{
		IP:        netip.MustParseAddr("203.0.113.7"),
		Host:      "tickets.example.com",
		Path:      "/en/product_123",
		Query:     "ref=mail&lang=en",
		Method:    "GET",
		UserAgent: h.Get("User-Agent"),
		Country:   "US",
		Headers:   h,
	}
}

// BenchmarkBypass evaluates five rules that all miss: the worst case of a
// request that is not bypassed.
func BenchmarkBypass(b *testing.B) {
	s, err := Compile(benchRules, benchLists)
	if err != nil {
		b.Fatal(err)
	}
	r := benchRequest()
	b.ReportAllocs()
	for b.Loop() {
		if ok, _ := s.Bypass(r); ok {
			b.Fatal("bypassed")
		}
	}
}

// BenchmarkBypassRule evaluates each of the five rules alone.
func BenchmarkBypassRule(b *testing.B) {
	for _, rule := range benchRules {
		b.Run(rule.Description, func(b *testing.B) {
			s, err := Compile([]Rule{rule}, benchLists)
			if err != nil {
				b.Fatal(err)
			}
			r := benchRequest()
			b.ReportAllocs()
			for b.Loop() {
				s.Bypass(r)
			}
		})
	}
}
