package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/usherhq/usher/internal/config"
)

// The docs are executable: every config they show passes usher check's
// validation, every flag of every command line they show exists, and the
// sample output of usher check is what usher check prints.

// fragmentMarker, on the line before a YAML block, says the block is a
// part of a config (it must still be YAML, but not a whole config).
const fragmentMarker = "<!-- fragment -->"

// invalidMarker, on the line before a YAML block, says the block is a
// config usher check refuses, shown with its errors.
const invalidMarker = "<!-- invalid -->"

// docBlock is a code block of a Markdown file.
type docBlock struct {
	file string // relative to the module root
	line int    // of its first line of content
	lang string // the fence's info string; "indented" for an indented block
	text string
	// fragment reports a fragmentMarker on the line before the fence,
	// invalid an invalidMarker.
	fragment, invalid bool
}

// docFiles returns README.md and every Markdown file under docs/.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(repoRoot, path)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// docBlocks returns the code blocks of the Markdown file name: fenced
// ones, and indented ones (four spaces, after a blank line, outside lists).
func docBlocks(t *testing.T, name string) []docBlock {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, name))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var out []docBlock
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		trimmed := strings.TrimLeft(l, " ")
		if lang, ok := strings.CutPrefix(trimmed, "```"); ok {
			indent := l[:len(l)-len(trimmed)] // a fence in a list item
			blk := docBlock{file: name, line: i + 2, lang: strings.TrimSpace(lang)}
			blk.fragment = i > 0 && strings.TrimSpace(lines[i-1]) == fragmentMarker
			blk.invalid = i > 0 && strings.TrimSpace(lines[i-1]) == invalidMarker
			var body []string
			for i++; i < len(lines) && !strings.HasPrefix(strings.TrimLeft(lines[i], " "), "```"); i++ {
				body = append(body, strings.TrimPrefix(lines[i], indent))
			}
			blk.text = strings.Join(body, "\n") + "\n"
			out = append(out, blk)
			continue
		}
		if strings.HasPrefix(l, "    ") && (i == 0 || strings.TrimSpace(lines[i-1]) == "") && !inList(lines, i) {
			blk := docBlock{file: name, line: i + 1, lang: "indented"}
			var body []string
			for ; i < len(lines) && (strings.HasPrefix(lines[i], "    ") || strings.TrimSpace(lines[i]) == ""); i++ {
				body = append(body, strings.TrimPrefix(lines[i], "    "))
			}
			i--
			blk.text = strings.TrimRight(strings.Join(body, "\n"), "\n") + "\n"
			out = append(out, blk)
		}
	}
	return out
}

// inList reports whether the indented line i continues a list item (the
// paragraph it follows starts with "- " or "1. "), which Markdown does not
// read as code.
func inList(lines []string, i int) bool {
	for j := i - 1; j >= 0; j-- {
		l := lines[j]
		if strings.TrimSpace(l) == "" {
			continue
		}
		if !strings.HasPrefix(l, " ") {
			return listItem.MatchString(l)
		}
	}
	return false
}

var listItem = regexp.MustCompile(`^(- |\* |\d+\. )`)

// usherTopLevel are the top-level fields of usher's config: a YAML block
// with any of them claims to be a usher config; the others (Kubernetes
// manifests, Traefik's or Envoy's files) are another program's.
var usherTopLevel = []string{"listen", "origin", "trusted_proxies", "admin", "store", "keys", "ip_lists",
	"country_header", "forward_auth", "admission_token", "unknown_hosts", "watch_config", "rooms"}

// TestDocsConfigsAreValid checks every YAML block of the README and docs:
// a usher config passes usher check's validation (config.Parse, which
// reads no file), a block marked as a fragment or another program's file
// is YAML.
func TestDocsConfigsAreValid(t *testing.T) {
	configs := 0
	for _, f := range docFiles(t) {
		for _, b := range docBlocks(t, f) {
			if b.lang != "yaml" {
				continue
			}
			var doc map[string]any
			if err := yaml.Unmarshal([]byte(b.text), &doc); err != nil {
				t.Errorf("%s:%d: the YAML block is not YAML: %v", b.file, b.line, err)
				continue
			}
			claims := slices.ContainsFunc(usherTopLevel, func(k string) bool { _, ok := doc[k]; return ok })
			if b.fragment || !claims {
				continue
			}
			configs++
			_, err := config.Parse(strings.NewReader(b.text))
			if b.invalid {
				if err == nil {
					t.Errorf("%s:%d: the config marked %s passes usher check", b.file, b.line, invalidMarker)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s:%d: the config fails usher check (mark a part of a config with %s on the line before its fence):\n%v",
					b.file, b.line, fragmentMarker, err)
			}
		}
	}
	if configs < 5 {
		t.Errorf("only %d configs found in the docs: the extraction is broken", configs)
	}
}

// cliLine matches a command line of usher in a shell block, after an
// optional prompt: "usher VERB ..." or "go run ./cmd/usher VERB ...".
var cliLine = regexp.MustCompile(`^(?:\$ )?(?:usher|go run \./cmd/usher|\./usher|bin/usher)\s+(.*)$`)

// flagName matches a flag on a command line.
var flagName = regexp.MustCompile(`(?:^|\s|\[|\()--([a-z][a-z0-9-]*)`)

// verbArgs returns the words that select the command of a usher command
// line: "room set" for "room set sale x=1", "bench" for "bench --self".
func verbArgs(words []string) []string {
	if len(words) == 0 {
		return nil
	}
	verb := words[0]
	switch verb {
	case "keys", "invite", "room", "events", "rules":
		if len(words) > 1 && !strings.HasPrefix(words[1], "-") {
			return []string{verb, strings.SplitN(words[1], "|", 2)[0]}
		}
	}
	return []string{verb}
}

// knownFlags returns the flags the command accepts, from its -h output.
func knownFlags(t *testing.T, cmd []string) ([]string, bool) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	m := &Main{Stdout: &stdout, Stderr: &stderr}
	code := m.Run(context.Background(), append(slices.Clone(cmd), "-h"))
	out := stderr.String()
	if code != 2 || !strings.Contains(out, "Usage: usher") {
		return nil, false
	}
	var flags []string
	for _, m := range helpFlag.FindAllStringSubmatch(out, -1) {
		flags = append(flags, m[1])
	}
	return flags, true
}

var helpFlag = regexp.MustCompile(`(?m)^\s+-([a-z][a-z0-9-]*)`)

// TestDocsCommandFlagsExist checks that every flag of every usher command
// line in the README's and docs' shell blocks is one its command accepts.
func TestDocsCommandFlagsExist(t *testing.T) {
	cache := map[string][]string{}
	checked := 0
	for _, f := range docFiles(t) {
		for _, b := range docBlocks(t, f) {
			switch b.lang {
			case "sh", "console", "shell", "bash", "indented", "":
			default:
				continue
			}
			lines := strings.Split(b.text, "\n")
			for i := 0; i < len(lines); i++ {
				l := strings.TrimSpace(lines[i])
				for strings.HasSuffix(l, `\`) && i+1 < len(lines) {
					i++
					l = strings.TrimSuffix(l, `\`) + " " + strings.TrimSpace(lines[i])
				}
				m := cliLine.FindStringSubmatch(l)
				if m == nil {
					continue
				}
				rest, _, _ := strings.Cut(m[1], " #")
				rest, _, _ = strings.Cut(rest, "   ") // a usage line's description
				flags := flagName.FindAllStringSubmatch(rest, -1)
				if len(flags) == 0 {
					continue
				}
				cmd := verbArgs(strings.Fields(rest))
				if strings.ToUpper(cmd[0]) == cmd[0] { // usher COMMAND -h
					continue
				}
				key := strings.Join(cmd, " ")
				known, ok := cache[key]
				if !ok {
					if known, ok = knownFlags(t, cmd); !ok {
						t.Errorf("%s:%d: usher %s: not a command that takes flags (%q)", b.file, b.line, key, l)
						continue
					}
					cache[key] = known
				}
				for _, fl := range flags {
					checked++
					if !slices.Contains(known, fl[1]) {
						t.Errorf("%s:%d: usher %s has no flag --%s (%q); it has %v", b.file, b.line, key, fl[1], l, known)
					}
				}
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d flags found in the docs: the extraction is broken", checked)
	}
}

// checkSample matches a sample run of usher check on a config the docs
// show: the command, then its output.
var checkSample = regexp.MustCompile(`^\$ usher check --config ([a-z0-9_-]+\.yaml)\n`)

// TestDocsCheckOutput runs usher check on each config the docs show with
// its output ("$ usher check --config usher.yaml" in the block after the
// config) and compares the output with the docs': what it prints for a
// valid config, its errors (and exit code 1) for one marked invalid. The
// files a config names (secrets, tokens, pages) are created for it.
func TestDocsCheckOutput(t *testing.T) {
	samples := 0
	for _, f := range docFiles(t) {
		var last *docBlock
		for _, b := range docBlocks(t, f) {
			if b.lang == "yaml" && !b.fragment {
				last = &b
				continue
			}
			m := checkSample.FindStringSubmatch(b.text)
			if m == nil || last == nil {
				continue
			}
			samples++
			dir := t.TempDir()
			writeNamedFiles(t, dir, last.text)
			path := filepath.Join(dir, m[1])
			if err := os.WriteFile(path, []byte(last.text), 0o600); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			prog := &Main{Stdout: &stdout, Stderr: &stderr}
			t.Setenv("USHER_ADMIN", "")
			code := prog.Run(context.Background(), []string{"check", "--config", path})
			if want := map[bool]int{false: 0, true: 1}[last.invalid]; code != want {
				t.Errorf("%s:%d: usher check of the config at %s:%d: exit %d, want %d\n%s", b.file, b.line, last.file, last.line, code, want, stderr.String())
				continue
			}
			got := strings.ReplaceAll(stdout.String()+stderr.String(), path, m[1])
			want := strings.TrimPrefix(b.text, m[0])
			if got != want {
				t.Errorf("%s:%d: usher check prints another text than the docs show.\ndocs:\n%s\nusher check:\n%s", b.file, b.line, want, got)
			}
		}
	}
	if samples < 2 {
		t.Errorf("only %d samples of usher check found in the docs", samples)
	}
}

// namedFile matches a field of a config that names a file.
var namedFile = regexp.MustCompile(`(?m)^\s*-?\s*(token_file|secret_file|password_file|custom_page_html):\s*(\S+)`)

// writeNamedFiles creates, under dir, each file the config names, with
// content its field accepts: a 32-byte key in base64 serves as a key, a
// token, a password and a webhook secret.
func writeNamedFiles(t *testing.T, dir, cfg string) {
	t.Helper()
	for _, m := range namedFile.FindAllStringSubmatch(cfg, -1) {
		name := m[2]
		if filepath.IsAbs(name) {
			continue
		}
		content := "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n"
		if m[1] == "custom_page_html" {
			content = "<!doctype html><title>{{waitTimeFormatted}}</title><p>{{waitTimeFormatted}}</p>\n"
		}
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// mdLink matches a relative link of Markdown or an image's src.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)|src="([^"]+)"`)

// TestDocsLinks checks that every relative link of the README and docs
// leads to a file or folder of the repository and, into a Markdown page,
// to a heading it has.
func TestDocsLinks(t *testing.T) {
	links := 0
	for _, f := range docFiles(t) {
		b, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1] + m[2]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				links++
				path, anchor, _ := strings.Cut(target, "#")
				file := f
				if path != "" {
					file = filepath.ToSlash(filepath.Join(filepath.Dir(f), path))
				}
				if _, err := os.Stat(filepath.Join(repoRoot, file)); err != nil {
					t.Errorf("%s:%d: the link %s leads nowhere (%s)", f, i+1, target, file)
					continue
				}
				if anchor == "" || !strings.HasSuffix(file, ".md") {
					continue
				}
				if !slices.Contains(headingAnchors(t, file), anchor) {
					t.Errorf("%s:%d: the link %s: %s has no heading #%s", f, i+1, target, file, anchor)
				}
			}
		}
	}
	if links < 50 {
		t.Errorf("only %d links found: the extraction is broken", links)
	}
}

// headingAnchors returns the anchors GitHub gives the headings of the
// Markdown file name: lower case, spaces to hyphens, punctuation dropped.
func headingAnchors(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, name))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fenced := false
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimLeft(l, " "), "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(l, "#")))
		var a strings.Builder
		for _, r := range h {
			switch {
			case r == ' ':
				a.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
				a.WriteRune(r)
			}
		}
		out = append(out, a.String())
	}
	return out
}

// documentedCommands are the commands docs/cli.md documents, each with
// the flags its -h lists.
var documentedCommands = [][]string{
	{"serve"}, {"demo"}, {"check"}, {"keys", "new"}, {"bench"}, {"simulate"}, {"invite", "new"}, {"health"},
	{"rooms"}, {"room", "get"}, {"room", "set"}, {"room", "unset"}, {"room", "reset"}, {"room", "queue-all"},
	{"room", "suspend"}, {"events", "list"}, {"events", "add"}, {"events", "set"}, {"rules", "list"},
	{"rules", "add"}, {"rules", "set"}, {"audit"}, {"top"}, {"analytics"}, {"verify-draw"},
}

// cliTableFlag matches a flag's row of a table of docs/cli.md.
var cliTableFlag = regexp.MustCompile("^\\| `--([a-z][a-z0-9-]*)`(?: / `--([a-z][a-z0-9-]*)`)? \\|")

// TestDocsCLIReference checks docs/cli.md against the commands: every
// flag of a command's table (under "## usher COMMAND") is one the command
// accepts, and every flag of every command is written in the page.
func TestDocsCLIReference(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	var section []string
	rows := 0
	for i, l := range strings.Split(page, "\n") {
		if h, ok := strings.CutPrefix(l, "## "); ok {
			section = nil
			if words, ok := strings.CutPrefix(h, "usher "); ok {
				section = strings.Fields(words)
			}
			continue
		}
		m := cliTableFlag.FindStringSubmatch(l)
		if m == nil || section == nil {
			continue
		}
		known, ok := knownFlags(t, section)
		if !ok {
			t.Errorf("docs/cli.md:%d: usher %s is not a command with flags", i+1, strings.Join(section, " "))
			continue
		}
		for _, fl := range m[1:] {
			if fl == "" {
				continue
			}
			rows++
			if !slices.Contains(known, fl) {
				t.Errorf("docs/cli.md:%d: usher %s has no flag --%s; it has %v", i+1, strings.Join(section, " "), fl, known)
			}
		}
	}
	if rows < 30 {
		t.Errorf("only %d flag rows found in docs/cli.md", rows)
	}
	for _, cmd := range documentedCommands {
		known, ok := knownFlags(t, cmd)
		if !ok {
			t.Errorf("usher %s: no flags listed by -h", strings.Join(cmd, " "))
			continue
		}
		for _, fl := range known {
			if !strings.Contains(page, "`--"+fl+"`") && !strings.Contains(page, "--"+fl+" ") {
				t.Errorf("docs/cli.md does not document --%s of usher %s", fl, strings.Join(cmd, " "))
			}
		}
	}
}

// TestDocsMetricsReference checks that docs/metrics.md documents every
// metric a running node registers (on the embedded store and on Redis).
func TestDocsMetricsReference(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	names := registeredMetrics(t)
	checked := 0
	for name := range names {
		if !strings.HasPrefix(name, "usher_") {
			continue
		}
		base := name
		for _, s := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(name, s); ok && names[b] {
				base = ""
			}
		}
		if base == "" {
			continue
		}
		checked++
		if !strings.Contains(page, "`"+name+"`") && !strings.Contains(page, "`"+name+"{") {
			t.Errorf("docs/metrics.md does not document %s", name)
		}
	}
	if checked < 20 {
		t.Errorf("only %d metrics registered: the node is not the one serve runs", checked)
	}
}

// TestREADMEIsAFrontDoor keeps the README short, with the two commands
// (.ci/run runs the test command it names) and the way into the manual.
func TestREADMEIsAFrontDoor(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	if n := strings.Count(readme, "\n"); n > 250 {
		t.Errorf("README.md has %d lines: it is the front door (at most 250); move the detail to a page of docs/", n)
	}
	lines := strings.Split(readme, "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	for _, want := range []string{"make test", "go run ./cmd/usher demo"} {
		if !slices.Contains(lines, want) {
			t.Errorf("README.md does not show the command %q on a line of its own", want)
		}
	}
	for _, want := range []string{"(docs/README.md)", "(docs/getting-started.md)"} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md does not link to %s", strings.Trim(want, "()"))
		}
	}
}
