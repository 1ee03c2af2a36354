package rules_test

import (
	"fmt"
	"net/http"
	"net/netip"

	"github.com/usherhq/usher/internal/rules"
)

func ExampleCompile() {
	set, err := rules.Compile([]rules.Rule{
		{Description: "admins", Expression: `path.startsWith("/admin")`, Enabled: true},
		{Description: "office", Expression: `ip.in_ip_list("office") && method == "GET"`, Enabled: true},
		{Description: "app", Expression: `headers["x-mobile-app"] == "tickets"`, Enabled: true},
		{Description: "anz", Expression: `country in ["NZ", "AU"]`, Enabled: false},
		{Description: "monitoring", Expression: `user_agent.contains("Pingdom")`, Enabled: true},
	}, map[string][]netip.Prefix{
		"office": {netip.MustParsePrefix("192.0.2.0/24")},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	r := &rules.Request{
		IP:      netip.MustParseAddr("198.51.100.1"),
		Host:    "tickets.example.com",
		Path:    "/en/product_123",
		Method:  "GET",
		Country: "NZ",
		Headers: http.Header{"X-Mobile-App": {"tickets"}},
	}
	ok, name := set.Bypass(r)
	fmt.Printf("%v %q\n", ok, name)
	r.Headers = nil // the app header is gone, and "anz" is disabled
	ok, name = set.Bypass(r)
	fmt.Printf("%v %q\n", ok, name)

	_, err = rules.Compile([]rules.Rule{
		{Description: "staff", Expression: `hots == "staff.example.com"`},
		{Description: "office", Expression: `ip.in_cidr("192.0.2.0/33")`},
	}, nil)
	fmt.Println(err)
	// Output:
	// true "app"
	// false ""
	// rules[0] ("staff"): expression: 1:1: undeclared reference to 'hots' (did you mean 'host'?)
	// rules[1] ("office"): expression: 1:12: in_cidr: invalid CIDR "192.0.2.0/33": prefix length out of range
}
