package rules

import (
	"fmt"
	"maps"
	"net/netip"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/overloads"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
)

// Cost limits. CEL measures cost in abstract units, roughly one per
// operation plus one per ten bytes a string function reads.
const (
	// MaxCost is the most an expression may cost: estimated at compile time
	// for every rule, and counted while running for rules with loops (all,
	// exists, exists_one, map, filter), which stop at MaxCost.
	MaxCost = 100_000

	// MaxStringSize is the string size, in bytes, that compile-time cost
	// estimates assume for path, query, user_agent, each header value, and
	// each parameter name and value. Header names are assumed up to 256.
	MaxStringSize = 8 << 10

	// MaxEntries is the number of headers, of parameters and of values of
	// one parameter that compile-time cost estimates assume.
	MaxEntries = 100

	// MaxRegexpInsts bounds a matches pattern's compiled program: Go's
	// regexp runs in time proportional to the input times the program, and
	// counted repeats (\pL{1000}) make programs large while the cost
	// estimate prices only the pattern's text.
	MaxRegexpInsts = 256

	// MaxNesting and MaxExpressionSize bound an expression's parse: deeply
	// nested literals take the type checker time that grows steeply with
	// their depth.
	MaxNesting        = 32
	MaxExpressionSize = 4096
)

// Function names.
const (
	fnInCIDR = "in_cidr"
	fnInList = "in_ip_list" // not "in_list": that is the overload id of the in operator on lists
)

// variables declares the variables of every expression.
var variables = []cel.EnvOption{
	cel.Variable("ip", cel.StringType),
	cel.Variable("host", cel.StringType),
	cel.Variable("path", cel.StringType),
	cel.Variable("query", cel.StringType),
	cel.Variable("params", cel.MapType(cel.StringType, cel.ListType(cel.StringType))),
	cel.Variable("method", cel.StringType),
	cel.Variable("headers", cel.MapType(cel.StringType, cel.StringType)),
	cel.Variable("user_agent", cel.StringType),
	cel.Variable("country", cel.StringType),
}

// compiler holds what one Compile call's functions need at run time. Both
// maps are written only while compiling, then only read.
type compiler struct {
	lists map[string][]netip.Prefix
	cidrs map[string]netip.Prefix // constant CIDRs, parsed once
}

func (c *compiler) env() (*cel.Env, error) {
	opts := slices.Clone(variables)
	opts = append(opts,
		cel.Function(fnInCIDR, cel.MemberOverload("string_in_cidr_string",
			[]*cel.Type{cel.StringType, cel.StringType}, cel.BoolType,
			cel.BinaryBinding(c.inCIDR))),
		cel.Function(fnInList, cel.MemberOverload("string_in_ip_list_string",
			[]*cel.Type{cel.StringType, cel.StringType}, cel.BoolType,
			cel.BinaryBinding(c.inList))),
		cel.ParserRecursionLimit(MaxNesting),
		cel.ParserExpressionSizeLimit(MaxExpressionSize),
		cel.ASTValidators(
			cel.ValidateDurationLiterals(),
			cel.ValidateTimestampLiterals(),
			cel.ValidateHomogeneousAggregateLiterals(),
			constValidator{c},
		),
	)
	return cel.NewEnv(opts...)
}

// compile compiles one expression and returns its problems as
// "line:column: message".
func (c *compiler) compile(env *cel.Env, expr string) (cel.Program, []string) {
	if strings.TrimSpace(expr) == "" {
		return nil, []string{"is empty"}
	}
	checked, iss := env.Compile(expr)
	if iss.Err() != nil {
		var out []string
		for _, e := range iss.Errors() {
			if e.Location.Line() < 1 || e.Location.Column() < 0 {
				out = append(out, e.Message) // no position to give
				continue
			}
			out = append(out, fmt.Sprintf("%d:%d: %s", e.Location.Line(), e.Location.Column()+1, e.Message))
		}
		return nil, out
	}
	if t := checked.OutputType(); !t.IsExactType(cel.BoolType) {
		return nil, []string{fmt.Sprintf("result is %s, want bool", cel.FormatCELType(t))}
	}
	est, err := env.EstimateCost(checked, sizeEstimator{})
	if err != nil {
		return nil, []string{fmt.Sprintf("estimate cost: %v", err)}
	}
	if est.Max > MaxCost {
		return nil, []string{fmt.Sprintf("too expensive: estimated cost up to %d on large requests, limit %d", est.Max, MaxCost)}
	}
	opts := []cel.ProgramOption{cel.EvalOptions(cel.OptOptimize)}
	if hasLoop(checked) {
		// Only loops make cost grow faster than the input; counting cost
		// while running adds a few hundred ns, so other rules do without.
		opts = append(opts, cel.CostLimit(MaxCost))
	}
	prg, err := env.Program(checked, opts...)
	if err != nil {
		return nil, []string{err.Error()}
	}
	return prg, nil
}

// hasLoop reports whether the expression has a comprehension (all, exists,
// exists_one, map, filter).
func hasLoop(a *cel.Ast) bool {
	root := ast.NavigateAST(a.NativeRep())
	return len(ast.MatchDescendants(root, ast.KindMatcher(ast.ComprehensionKind))) > 0
}

// inCIDR implements <string>.in_cidr(<string>).
func (c *compiler) inCIDR(lhs, rhs ref.Val) ref.Val {
	a, err := parseAddr(lhs)
	if err != nil {
		return err
	}
	s, ok := rhs.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(rhs)
	}
	p, ok := c.cidrs[string(s)]
	if !ok {
		var err error
		if p, err = parseCIDR(string(s)); err != nil {
			return types.NewErr("%s: %v", fnInCIDR, err)
		}
	}
	return types.Bool(p.Contains(a))
}

// inList implements <string>.in_ip_list(<string>).
func (c *compiler) inList(lhs, rhs ref.Val) ref.Val {
	a, err := parseAddr(lhs)
	if err != nil {
		return err
	}
	s, ok := rhs.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(rhs)
	}
	list, ok := c.lists[string(s)]
	if !ok {
		return types.NewErr("%s: unknown IP list %q", fnInList, string(s))
	}
	for _, p := range list {
		if p.Contains(a) {
			return types.True
		}
	}
	return types.False
}

// parseAddr parses the receiver of in_cidr and in_ip_list.
func parseAddr(v ref.Val) (netip.Addr, ref.Val) {
	s, ok := v.(types.String)
	if !ok {
		return netip.Addr{}, types.MaybeNoSuchOverloadErr(v)
	}
	a, err := netip.ParseAddr(string(s))
	if err != nil {
		return netip.Addr{}, types.NewErr("invalid IP address %q", string(s))
	}
	return a.Unmap().WithZone(""), nil
}

// parseCIDR parses a CIDR block such as "10.0.0.0/8" with an error that
// names it.
func parseCIDR(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		msg, _ := strings.CutPrefix(err.Error(), fmt.Sprintf("netip.ParsePrefix(%q): ", s))
		return netip.Prefix{}, fmt.Errorf("invalid CIDR %q: %s", s, msg)
	}
	return p.Masked(), nil
}

// constValidator checks constant arguments of in_cidr, in_ip_list and matches
// at compile time, and parses constant CIDRs once.
type constValidator struct{ c *compiler }

func (constValidator) Name() string { return "usher.rules.constants" }

func (v constValidator) Validate(_ *cel.Env, _ cel.ValidatorConfig, a *ast.AST, iss *cel.Issues) {
	root := ast.NavigateAST(a)
	for _, call := range ast.MatchDescendants(root, ast.FunctionMatcher(overloads.Matches)) {
		c := call.AsCall()
		i := 1 // matches(s, re)
		if c.IsMemberFunction() {
			i = 0 // s.matches(re)
		}
		if len(c.Args()) <= i {
			continue
		}
		arg := c.Args()[i]
		if arg.Kind() != ast.LiteralKind {
			// A pattern from the request would be compiled per request,
			// at the mercy of whoever sent it.
			iss.ReportErrorAtID(arg.ID(), "matches: the regular expression must be a constant string")
			continue
		}
		if s, ok := arg.AsLiteral().(types.String); ok {
			if _, err := regexp.Compile(string(s)); err != nil {
				iss.ReportErrorAtID(arg.ID(), "matches: invalid regular expression %q: %v", string(s), err)
			} else if n := regexpInsts(string(s)); n > MaxRegexpInsts {
				iss.ReportErrorAtID(arg.ID(), "matches: the regular expression %q is too large to run on every request (%d instructions, limit %d): use fewer or smaller counted repeats", string(s), n, MaxRegexpInsts)
			}
		}
	}
	for _, fn := range []string{fnInCIDR, fnInList} {
		for _, call := range ast.MatchDescendants(root, ast.FunctionMatcher(fn)) {
			c := call.AsCall()
			if t := c.Target(); c.IsMemberFunction() && t.Kind() == ast.LiteralKind {
				if s, ok := t.AsLiteral().(types.String); ok {
					if _, err := netip.ParseAddr(string(s)); err != nil {
						iss.ReportErrorAtID(t.ID(), "%s: invalid IP address %q", fn, string(s))
					}
				}
			}
			if len(c.Args()) != 1 || c.Args()[0].Kind() != ast.LiteralKind {
				continue
			}
			arg := c.Args()[0]
			s, ok := arg.AsLiteral().(types.String)
			if !ok {
				continue
			}
			switch fn {
			case fnInCIDR:
				p, err := parseCIDR(string(s))
				if err != nil {
					iss.ReportErrorAtID(arg.ID(), "%s: %v", fn, err)
					continue
				}
				v.c.cidrs[string(s)] = p
			case fnInList:
				if _, ok := v.c.lists[string(s)]; !ok {
					iss.ReportErrorAtID(arg.ID(), "%s: unknown IP list %q (known: %s)", fn, string(s), knownLists(v.c.lists))
				}
			}
		}
	}
}

// regexpInsts returns the size of the program Go's regexp runs for a
// valid pattern.
func regexpInsts(pattern string) int {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return 0
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 0
	}
	return len(prog.Inst)
}

func knownLists(lists map[string][]netip.Prefix) string {
	if len(lists) == 0 {
		return "none"
	}
	names := slices.Sorted(maps.Keys(lists))
	for i, n := range names {
		names[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(names, ", ")
}

// sizeEstimator bounds the sizes of the variables for compile-time cost
// estimates.
type sizeEstimator struct{}

func (sizeEstimator) EstimateSize(n cost.AstNode) *cost.SizeEstimate {
	path := n.Path()
	if len(path) == 0 {
		return nil
	}
	var sz cost.SizeEstimate
	switch path[0] {
	case "ip":
		sz = cost.RangedSizeEstimate(0, 45)
	case "host":
		sz = cost.RangedSizeEstimate(0, 253)
	case "method", "country":
		sz = cost.RangedSizeEstimate(0, 16)
	case "headers", "params":
		switch {
		case len(path) == 1: // the map
			sz = cost.RangedSizeEstimate(0, MaxEntries)
		case path[0] == "headers" && path[1] == "@keys": // header names
			sz = cost.RangedSizeEstimate(0, 256)
		case path[0] == "params" && path[1] == "@values" && len(path) == 2: // a parameter's values
			sz = cost.RangedSizeEstimate(0, MaxEntries)
		default: // strings
			sz = cost.RangedSizeEstimate(0, MaxStringSize)
		}
	default:
		sz = cost.RangedSizeEstimate(0, MaxStringSize)
	}
	return &sz
}

func (sizeEstimator) EstimateCallCost(string, string, *cost.AstNode, []cost.AstNode) *cost.CallEstimate {
	return nil
}
