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
// reported in one *ValidationError whose problems carry their line: first
// the decoding problems, or if there are none, the validation problems.
// Each room's events come back sorted by start.
//
// Parse does no I/O beyond r: secret_file and token_file are checked for
// presence only and are not read, and custom_page_html only for being
// non-empty (Load reads them all).
func Parse(r io.Reader) (*Config, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	c, lines, err := decode(data)
	if err != nil {
		return nil, err
	}
	if err := c.validate(nil, lines); err != nil {
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
	c, lines, err := decode(data)
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	c.dir = dir
	pre := c.readFiles(filepath.Dir(path))
	pre = append(pre, c.readWebhookSecrets(filepath.Dir(path))...)
	pre = append(pre, c.loadPages(dir)...)
	if err := c.validate(pre, lines); err != nil {
		return nil, err
	}
	c.sortEvents()
	return c, nil
}

// decode decodes data over Default and fills in the defaults, returning the
// line of every field path it saw.
func decode(data []byte) (*Config, map[string]int, error) {
	root, err := readDocument(data)
	if err != nil {
		return nil, nil, err
	}
	c := Default()
	d := &decoder{lines: make(map[string]int)}
	if root != nil && !isNull(root) {
		d.config(root, c)
	}
	if err := d.problems.err(); err != nil {
		return nil, nil, err
	}
	c.applyDefaults()
	return c, d.lines, nil
}

// validate validates c, adding the problems found before it (pre) and
// placing every problem on its line.
func (c *Config) validate(pre report, lines map[string]int) error {
	r := pre
	var v *ValidationError
	if err := c.Validate(); errors.As(err, &v) {
		r = append(r, v.Problems...)
	}
	r.locate(lines)
	return r.err()
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
// dir unless absolute.
func readSecretFile(dir, name string) (string, error) {
	if !filepath.IsAbs(name) {
		name = filepath.Join(dir, name)
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}
