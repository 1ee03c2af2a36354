package config

import (
	"fmt"
	"regexp"
	"slices"

	"go.yaml.in/yaml/v3"
)

// AdminToken is one named bearer token of the admin listener.
type AdminToken struct {
	// Name names the token in the audit log and the logs (never the token
	// itself): 1 to 32 of a-z, 0-9, '_' and '-', starting with a letter or
	// digit; unique, and not "admin" when Admin.Token is set.
	Name string
	// Token is the secret. Set Token or TokenFile, not both.
	Token string
	// TokenFile is a file holding the secret (surrounding white space is
	// ignored), relative to the config file's directory; Load reads it.
	TokenFile string
	// Role is "read" (GET requests only) or "write" (every request).
	// Required.
	Role string

	fileToken string // TokenFile's content, read by Load
	tokenRead bool   // whether Load read TokenFile
}

// Secret returns Token, or TokenFile's content when Load read it; "" when
// neither is known.
func (t *AdminToken) Secret() string {
	if t.Token != "" {
		return t.Token
	}
	return t.fileToken
}

// NamedToken is an admin bearer token ready for use.
type NamedToken struct {
	// Name names the token in the audit log.
	Name string
	// Secret is what clients send.
	Secret string
	// Write allows requests that change something; false allows GET (and
	// HEAD) only.
	Write bool
}

// BearerTokens returns every admin token whose secret is known: Token (or
// TokenFile's content) as a write token named "admin", then Tokens.
func (a *Admin) BearerTokens() []NamedToken {
	var out []NamedToken
	if s := a.BearerToken(); s != "" {
		out = append(out, NamedToken{Name: "admin", Secret: s, Write: true})
	}
	for i := range a.Tokens {
		t := &a.Tokens[i]
		if s := t.Secret(); s != "" {
			out = append(out, NamedToken{Name: t.Name, Secret: s, Write: t.Role == "write"})
		}
	}
	return out
}

var tokenNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// adminTokens decodes admin.tokens.
func (d *decoder) adminTokens(dst *[]AdminToken) field {
	return func(n *yaml.Node, at loc) {
		*dst = nil
		d.list(n, at, func(n *yaml.Node, at loc) {
			var t AdminToken
			d.mapping(n, at, map[string]field{
				"name":       d.text(&t.Name),
				"token":      d.text(&t.Token),
				"token_file": d.text(&t.TokenFile),
				"role":       d.text(&t.Role),
			})
			*dst = append(*dst, t)
		})
	}
}

// checkTokens checks admin.tokens: names, roles, one secret each, and no
// two tokens with the same secret (a request must name one token).
func (a *Admin) checkTokens(r *report, at loc) {
	names := make(map[string]int)
	secrets := make(map[string]string)
	if s := a.BearerToken(); s != "" {
		secrets[s] = "admin.token"
	}
	for i := range a.Tokens {
		t := &a.Tokens[i]
		tat := at.field("tokens").index(i)
		switch first, dup := names[t.Name]; {
		case !tokenNamePattern.MatchString(t.Name):
			r.add(0, tat.field("name"), "must be 1 to 32 of a-z, 0-9, '_' and '-', starting with a letter or digit, got %q", t.Name)
		case dup:
			r.add(0, tat.field("name"), "same as admin.tokens[%d]", first)
		case t.Name == "admin" && (a.Token != "" || a.TokenFile != ""):
			r.add(0, tat.field("name"), `"admin" names admin.token; choose another name`)
		default:
			names[t.Name] = i
		}
		if !slices.Contains([]string{"read", "write"}, t.Role) {
			r.add(0, tat.field("role"), "must be read (GET requests only) or write, got %q", t.Role)
		}
		switch {
		case t.Token != "" && t.TokenFile != "":
			r.add(0, tat, "set token or token_file, not both")
		case t.Token == "" && t.TokenFile == "":
			r.add(0, tat.field("token"), "required (set token or token_file)")
		}
		if s := t.Secret(); s != "" {
			if other, dup := secrets[s]; dup {
				r.add(0, tat, "has the same secret as %s: every token must differ", other)
			} else {
				secrets[s] = fmt.Sprintf("admin.tokens[%d]", i)
			}
		}
	}
}

// readTokenFiles reads the token_file of each of Tokens, relative to dir.
func (a *Admin) readTokenFiles(dir string) report {
	var r report
	for i := range a.Tokens {
		t := &a.Tokens[i]
		if t.TokenFile == "" {
			continue
		}
		at := loc{path: fmt.Sprintf("admin.tokens[%d].token_file", i)}
		switch s, err := readSecretFile(dir, t.TokenFile); {
		case err != nil:
			r.add(0, at, "%v", err)
		case s == "":
			r.add(0, at, "%s is empty", t.TokenFile)
		default:
			t.fileToken, t.tokenRead = s, true
		}
	}
	return r
}

// sameTokens reports whether two token lists are the same: names, roles
// and secrets (or token files, when not read).
func sameTokens(a, b []AdminToken) bool {
	return slices.EqualFunc(a, b, func(x, y AdminToken) bool {
		secret := func(t AdminToken) string {
			if t.TokenFile != "" && !t.tokenRead {
				return "file:" + t.TokenFile
			}
			return "token:" + t.Secret()
		}
		return x.Name == y.Name && x.Role == y.Role && secret(x) == secret(y)
	})
}
