// Package rules compiles and evaluates bypass rules: expressions over a
// request that let matching traffic skip the waiting room. A bypassed request
// goes to the origin untouched: it gets no cookie, is not queued and is not
// counted in any statistic.
//
// Rules are written in CEL, the Common Expression Language
// (https://cel.dev, the language Envoy and Kubernetes use). They are compiled
// and type-checked once, by [Compile], when the configuration is loaded, and
// evaluated per request by [Set.Bypass] in a few hundred nanoseconds each.
//
// # Variables
//
// Every expression sees these variables, filled from [Request]:
//
//	ip          string  client address, e.g. "192.0.2.7" or "2001:db8::1";
//	                    IPv4-mapped IPv6 addresses are unmapped and zones
//	                    dropped; "" when unknown
//	host        string  host name, lower case, without port: "tickets.example.com"
//	path        string  cleaned request path the room matched: "/en/product_123"
//	query       string  raw query string without "?": "ticketid=42&lang=en"
//	params      map(string, list(string))
//	                    query parameters parsed from query (url.ParseQuery;
//	                    pairs that do not parse are dropped)
//	method      string  "GET", "POST", ...
//	headers     map(string, string)
//	                    request headers, names in lower case, several values
//	                    of one header joined with ", "
//	user_agent  string  the User-Agent header
//	country     string  country code from the configured country header,
//	                    e.g. "NZ"; "" when unknown
//
// # Functions
//
// Beside CEL's standard operators and functions (==, !=, in, &&, ||, !,
// size, startsWith, endsWith, contains, matches with RE2 syntax, the has,
// all, exists, exists_one, map and filter macros), two functions test
// addresses. Both are called on a string holding an address, normally ip:
//
//	ip.in_cidr("10.0.0.0/8")   true when ip is inside the CIDR block; IPv4
//	                           and IPv6 blocks both work; a bare address
//	                           is not a block, write "192.0.2.7/32"
//	ip.in_ip_list("office")    true when ip is inside any prefix of the
//	                           named IP list given to Compile
//
// (The list function is not called in_list because CEL already uses that
// name for the in operator on lists.) A constant CIDR that does not parse and
// a constant list name that Compile was not given are compile errors. An
// address, CIDR or list name computed at run time that is not valid is an
// evaluation error (see below). Regular expressions are RE2 (Go's regexp),
// must be constant strings, and are checked and compiled once, by Compile;
// write "(?i)" for case-insensitive matching.
//
// # Examples
//
//	path.startsWith("/admin")
//	path.endsWith("/userverified") && "ticketid" in params
//	ip.in_ip_list("office") && method == "GET"
//	ip.in_cidr("10.0.0.0/8") || ip.in_cidr("2001:db8::/32")
//	headers["x-mobile-app"] == "tickets"
//	"x-mobile-app" in headers && headers["x-mobile-app"].startsWith("tickets/")
//	country in ["NZ", "AU"]
//	!(country in ["NZ", "AU"])
//	user_agent.contains("Pingdom")
//	user_agent.matches("(?i)(pingdom|uptimerobot)")
//	host == "api.example.com" && params["version"][0] == "2"
//
// # Compiling
//
// [Compile] compiles every rule, enabled or not, so a broken rule is caught
// when the configuration loads even while it is switched off; only enabled
// rules are run. A rule must have a boolean result. Compile collects every
// problem, one error per problem, joined with [errors.Join], each naming
// the rule, the position in the expression (line:column, both from 1) and
// the reason:
//
//	rules[1] ("staff"): expression: 1:1: undeclared reference to 'hots' (did you mean 'host'?)
//
// Evaluation has a cost limit: an expression estimated to cost more than
// [MaxCost] on large inputs (strings up to [MaxStringSize] bytes, up to
// [MaxEntries] headers or parameters) is rejected at compile time, and a
// rule with a loop (all, exists, exists_one, map, filter) that exceeds
// [MaxCost] while running is stopped, and is false.
//
// # Evaluating
//
// [Set.Bypass] runs the enabled rules in order and reports the first that is
// true. Rules fail closed: an evaluation error (a missing map key such as
// headers["x-absent"], a run-time address that does not parse, the cost
// limit) makes that rule false, never a bypass. Errors propagate through !,
// so !headers["x-absent"].startsWith("a") is false too; guard with
// "x-absent" in headers when a header may be absent. A [Set] is safe for
// concurrent use.
package rules
