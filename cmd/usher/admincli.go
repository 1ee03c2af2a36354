package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/usherhq/usher/internal/admin"
)

// The admin verbs (rooms, room, events, rules, audit, top) talk to a
// running usher's admin API, in the style of kubectl: a verb, its
// positional arguments, field=value pairs written as in the config file,
// and flags anywhere on the line.

// defaultAdmin is the admin listener's address when neither --admin nor
// USHER_ADMIN says another.
const defaultAdmin = "127.0.0.1:9090"

// adminCmd is one admin verb's command line: its flags, and once parsed,
// its positional arguments and the client.
type adminCmd struct {
	m        *Main
	name     string // "room set", for messages
	fs       *flag.FlagSet
	addr     *string
	token    *string
	asJSON   *bool
	args     []string
	client   *admin.Client
	synopsis string
}

// newAdminCmd returns the command line of a verb with the shared flags:
// --admin, --token and --json.
func (m *Main) newAdminCmd(name, synopsis string) *adminCmd {
	c := &adminCmd{m: m, name: name, synopsis: synopsis}
	c.fs = m.flags(name, synopsis+" [--admin ADDR] [--token TOKEN] [--json]")
	addr := os.Getenv("USHER_ADMIN")
	if addr == "" {
		addr = defaultAdmin
	}
	c.addr = c.fs.String("admin", addr, "the admin listener, host:port or URL (env USHER_ADMIN)")
	c.token = c.fs.String("token", os.Getenv("USHER_TOKEN"), "the admin token (env USHER_TOKEN)")
	c.asJSON = c.fs.Bool("json", false, "print the API's JSON answer")
	return c
}

// parse reads args: flags anywhere, the positional arguments in order
// (all of them after "--"). want is how many positional arguments there
// must be at least, and more allows more. It fails with errUsage.
func (c *adminCmd) parse(args []string, want int, more bool) error {
	var rest []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, rest = args[:i], args[i+1:]
	}
	for {
		if err := c.fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			return errUsage
		}
		args = c.fs.Args()
		if len(args) == 0 {
			break
		}
		c.args = append(c.args, args[0])
		args = args[1:]
	}
	c.args = append(c.args, rest...)
	switch {
	case len(c.args) < want:
		return c.usage("missing arguments")
	case !more && len(c.args) > want:
		return c.usage(fmt.Sprintf("unexpected argument %q", c.args[want]))
	case *c.token == "":
		return c.usage("--token (or USHER_TOKEN) is required: an admin token of the running usher")
	}
	c.client = admin.NewClient(*c.addr, *c.token)
	return nil
}

// usage reports a bad command line (exit code 2).
func (c *adminCmd) usage(problem string) error {
	fmt.Fprintf(c.m.Stderr, "usher %s: %s\nUsage: usher %s\n", c.name, problem, c.synopsis)
	return errUsage
}

// ctx bounds one command's calls.
func (c *adminCmd) ctx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, 30*time.Second)
}

// printJSON prints v as indented JSON.
func (c *adminCmd) printJSON(v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.m.Stdout, "%s\n", b)
	return err
}

// apiError presents an error of the admin API: its message, every
// problem on a line of its own, and for a stale ETag what to do.
func apiError(err error) error {
	var ae *admin.APIError
	if !errors.As(err, &ae) {
		return err
	}
	var b strings.Builder
	b.WriteString(ae.Message)
	if len(ae.Problems) > 1 {
		b.Reset()
		b.WriteString("the change was refused; nothing changed:")
		for _, p := range ae.Problems {
			b.WriteString("\n  " + p.Message)
		}
	}
	switch ae.Status {
	case 412:
		b.WriteString(" (someone changed it while this command ran: run it again)")
	case 401:
		b.WriteString(" (check --token or USHER_TOKEN)")
	}
	return errors.New(b.String())
}

// fields parses field=value pairs, each value as a YAML scalar, the way
// the config file would read it: 500 is a number, true a boolean, 90s and
// anything else a string (as written: quotes and # are kept), null
// nothing; {..} and [..] are a block and a list. A dotted field
// (cookie_attributes.samesite=strict) sets one key of a block.
func fields(pairs []string) (map[string]any, error) {
	out := make(map[string]any)
	for _, p := range pairs {
		key, text, ok := strings.Cut(p, "=")
		if !ok || key == "" {
			return nil, fmt.Errorf("expected field=value, got %q", p)
		}
		v := scalar(text)
		path := strings.Split(key, ".")
		m := out
		for _, k := range path[:len(path)-1] {
			sub, ok := m[k].(map[string]any)
			if !ok {
				if _, set := m[k]; set {
					return nil, fmt.Errorf("%s: set both as a value and as a block", k)
				}
				sub = make(map[string]any)
				m[k] = sub
			}
			m = sub
		}
		last := path[len(path)-1]
		if _, dup := m[last]; dup {
			return nil, fmt.Errorf("%s is given twice", key)
		}
		m[last] = v
	}
	return out, nil
}

// scalar reads one value of a field=value pair.
func scalar(text string) any {
	if text == "" {
		return ""
	}
	var v any
	if err := yaml.Unmarshal([]byte(text), &v); err != nil {
		return text
	}
	switch v.(type) {
	case bool, int, int64, uint64, float64:
		return v
	case nil:
		if t := strings.TrimSpace(text); t == "null" || t == "~" {
			return nil
		}
	case map[string]any, []any:
		if t := strings.TrimSpace(text); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
			return v
		}
	}
	return text
}

// onOff reads on or off (or true, false, yes, no).
func onOff(s string) (bool, bool) {
	switch strings.ToLower(s) {
	case "on", "true", "yes", "1":
		return true, true
	case "off", "false", "no", "0":
		return false, true
	}
	return false, false
}

// show writes a value of the API compactly: strings bare, the rest in
// JSON.
func show(v any) string {
	switch x := v.(type) {
	case nil:
		return "(none)"
	case string:
		if x == "" {
			return `""`
		}
		return x
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// writesToTerminal reports whether w is a terminal.
func writesToTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
