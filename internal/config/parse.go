package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Parse reads a YAML config from r, strictly: an unknown field, a value of
// the wrong type or a duration without a unit is an error. It fills in the
// defaults (Default, DefaultSettings; a room's name defaults to its id and
// its origin to the top-level origin) and validates. Every problem is
// reported in one *ValidationError whose problems carry their line, sorted
// by line: the values that did not decode and the keys that are unknown,
// and what Validate finds in the rest. A value that did not decode is left
// at its default, and Validate's problems at it, inside it, or beside it
// naming it, are left out as noise. Only a YAML syntax error stops
// everything else from being checked. Each room's events come back sorted
// by start.
//
// Parse does no I/O beyond r: secret_file and token_file are checked for
// presence only and are not read, and custom_page_html only for being
// non-empty (Load reads them all).
func Parse(r io.Reader) (*Config, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	dc, err := decode(data)
	if err != nil {
		return nil, err
	}
	c := dc.config
	if err := c.validate(dc.problems, dc.failed, c.written); err != nil {
		return nil, err
	}
	c.sortEvents()
	return c, nil
}

// Load reads and parses the config file at path, as Parse does, then reads
// the secret_file of each key and the admin token_file, relative to the
// config file's directory unless absolute, and checks that each
// custom_page_html (of a room or an event) is a template usher can parse,
// storing its absolute path back in the room or event. A file that cannot
// be read or parsed is a problem reported with the others.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	dc, err := decode(data)
	if err != nil {
		return nil, err
	}
	c := dc.config
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	c.dir = dir
	pre := dc.problems
	pre = append(pre, c.readFiles(filepath.Dir(path))...)
	pre = append(pre, c.readWebhookSecrets(filepath.Dir(path))...)
	pre = append(pre, c.loadPages(dir)...)
	if err := c.validate(pre, dc.failed, c.written); err != nil {
		return nil, err
	}
	c.sortEvents()
	return c, nil
}

// decoded is a document decoded over Default: the config (its written
// field set to the line of every field path the file writes), the
// problems met, and the paths of the values that did not decode.
type decoded struct {
	config   *Config
	problems report
	failed   map[string]bool
}

// decode decodes data over Default and fills in the defaults. Its error is
// a problem that leaves nothing to check: YAML that does not parse, or a
// document that expands to too many values.
func decode(data []byte) (decoded, error) {
	root, err := readDocument(data)
	if err != nil {
		return decoded{}, err
	}
	c := Default()
	d := &decoder{lines: make(map[string]int)}
	if root != nil && !isNull(root) {
		d.config(root, c)
	}
	if d.tooBig {
		return decoded{}, d.problems.err()
	}
	c.applyDefaults()
	if len(d.lines) > 0 {
		c.written = d.lines
	}
	return decoded{config: c, problems: d.problems, failed: d.failed()}, nil
}

// validate validates c, adding the problems found before it (pre), leaving
// out those of Validate's that a value that failed to decode explains
// (see noise), placing every problem on its line (lines, by path) and
// ordering them by line.
func (c *Config) validate(pre report, failed map[string]bool, lines map[string]int) error {
	r := pre
	var v *ValidationError
	if err := c.Validate(); errors.As(err, &v) {
		for _, p := range v.Problems {
			if !noise(p, failed) {
				r = append(r, p)
			}
		}
	}
	r.locate(lines)
	return r.err()
}

// noise reports whether a problem Validate found is explained by a value
// that did not decode (and was left at its default or zero): a problem at
// that value, inside it or inside what holds it when that failed, or
// beside it (at its parent or a sibling) with a message naming it, like
// "must be after event_start_time" when event_start_time did not decode.
func noise(p Problem, failed map[string]bool) bool {
	if len(failed) == 0 {
		return false
	}
	for path := p.Path; ; path = parentPath(path) {
		if failed[path] {
			return true
		}
		if path == "" {
			break
		}
	}
	for f := range failed {
		parent := parentPath(f)
		name := strings.TrimPrefix(f[len(parent):], ".")
		if name == "" || strings.HasPrefix(name, "[") {
			continue
		}
		if (p.Path == parent || parentPath(p.Path) == parent) && containsWord(p.Message, name) {
			return true
		}
	}
	return false
}

// containsWord reports whether s holds name as a whole word: not inside a
// longer field name ("path" is not in "path_case_sensitive").
func containsWord(s, name string) bool {
	inWord := func(i int) bool {
		if i < 0 || i >= len(s) {
			return false
		}
		c := s[i]
		return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	for from := 0; ; {
		i := strings.Index(s[from:], name)
		if i < 0 {
			return false
		}
		i += from
		if !inWord(i-1) && !inWord(i+len(name)) {
			return true
		}
		from = i + 1
	}
}

// readFiles reads the token file and secret files named in c, relative to
// dir, and returns the problems met.
func (c *Config) readFiles(dir string) report {
	var r report
	if name := c.Admin.TokenFile; name != "" {
		at := loc{path: "admin.token_file"}
		if s, err := readSecretFile(dir, name); err != nil {
			r.add(0, at, "%v", err)
		} else if s == "" {
			r.add(0, at, "%s is empty", name)
		} else {
			c.Admin.fileToken, c.Admin.tokenRead = s, true
		}
	}
	r = append(r, c.Admin.readTokenFiles(dir)...)
	if rd := c.Store.Redis; rd != nil {
		r = append(r, rd.readFiles(dir)...)
	}
	for i := range c.Keys {
		k := &c.Keys[i]
		if k.SecretFile == "" {
			continue
		}
		s, err := readSecretFile(dir, k.SecretFile)
		if err != nil {
			r.add(0, loc{path: fmt.Sprintf("keys[%d].secret_file", i)}, "%v", err)
			continue
		}
		k.fileSecret, k.secretRead = s, true
	}
	return r
}

// readSecretFile returns the trimmed content of the file name, relative to
// dir unless absolute. A name that starts with $CREDENTIALS_DIRECTORY/ (or
// ${CREDENTIALS_DIRECTORY}/) is in the directory that environment variable
// names: systemd sets it for a service's credentials (LoadCredential), and
// an operator sets it to check the config outside the service
// (CREDENTIALS_DIRECTORY=/etc/usher usher check ...).
func readSecretFile(dir, name string) (string, error) {
	name, err := expandCredentials(name, os.Getenv(credentialsEnv))
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(name) {
		name = filepath.Join(dir, name)
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// credentialsEnv is the environment variable systemd sets to the
// directory of a service's credentials.
const credentialsEnv = "CREDENTIALS_DIRECTORY"

// expandCredentials replaces a leading $CREDENTIALS_DIRECTORY/ or
// ${CREDENTIALS_DIRECTORY}/ in name with credDir, which must then be set;
// any other name is returned as it is.
func expandCredentials(name, credDir string) (string, error) {
	for _, prefix := range []string{"$" + credentialsEnv + "/", "${" + credentialsEnv + "}/"} {
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		if credDir == "" {
			return "", fmt.Errorf("%s names $%s, which is not set: systemd sets it for a service with LoadCredential; to check the config outside the service, set it to the directory that holds the file (%s=/etc/usher usher check ...)", name, credentialsEnv, credentialsEnv)
		}
		return filepath.Join(credDir, rest), nil
	}
	return name, nil
}
