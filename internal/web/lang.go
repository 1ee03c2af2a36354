package web

import (
	"slices"
	"strconv"
	"strings"
)

// DefaultLanguage is the language of last resort.
const DefaultLanguage = "en-US"

// Limits on the Accept-Language header, which the visitor controls.
const (
	maxAcceptLanguage = 1024 // bytes read
	maxLanguageRanges = 32   // ranges considered
)

// Languages returns the BCP 47 tags the default pages are written in.
func Languages() []string {
	tags := make([]string, len(catalog))
	for i, m := range catalog {
		tags[i] = m.tag
	}
	return tags
}

// Language picks the language of a page: the first of the visitor's
// acceptLanguage (an Accept-Language header, by q-value, ties in order)
// that usher has, else defaultLang (the room's default_template_language)
// when usher has it, else en-US. Each tag matches exactly or by its
// language: "de" and "de-AT" get de-DE, "pt-PT" gets pt-BR; Traditional
// Chinese (zh-TW, zh-HK, zh-MO, zh-Hant) is not served Simplified. "*", or
// a header usher cannot read, leaves the choice to defaultLang; ranges
// with q=0 or a malformed q are ignored. The result is one of Languages.
func Language(acceptLanguage, defaultLang string) string {
	for _, r := range parseAcceptLanguage(acceptLanguage) {
		if r == "*" {
			break
		}
		if tag, ok := SupportedLanguage(r); ok {
			return tag
		}
	}
	if tag, ok := SupportedLanguage(defaultLang); ok {
		return tag
	}
	return DefaultLanguage
}

// SupportedLanguage returns the language of Languages that serves tag
// (matched as Language does) and whether there is one. Config validation
// can use it for default_template_language.
func SupportedLanguage(tag string) (string, bool) {
	tag = strings.ToLower(strings.ReplaceAll(strings.TrimSpace(tag), "_", "-"))
	if !validTag(tag) {
		return "", false
	}
	for _, m := range catalog {
		if strings.EqualFold(m.tag, tag) {
			return m.tag, true
		}
	}
	primary, rest, _ := strings.Cut(tag, "-")
	if primary == "zh" && traditionalChinese(rest) {
		return "", false
	}
	for _, m := range catalog {
		if p, _, _ := strings.Cut(m.tag, "-"); strings.EqualFold(p, primary) {
			return m.tag, true
		}
	}
	return "", false
}

// traditionalChinese reports whether the subtags after "zh" ask for
// Traditional characters.
func traditionalChinese(subtags string) bool {
	for s := range strings.SplitSeq(subtags, "-") {
		switch s {
		case "hant", "tw", "hk", "mo":
			return true
		case "hans":
			return false
		}
	}
	return false
}

// messagesFor returns the messages of lang, matched as by SupportedLanguage;
// en-US when usher has none.
func messagesFor(lang string) *Messages {
	for _, m := range catalog {
		if m.tag == lang {
			return m
		}
	}
	if tag, ok := SupportedLanguage(lang); ok {
		return messagesFor(tag)
	}
	return catalog[0]
}

// parseAcceptLanguage returns the language ranges of an Accept-Language
// header (RFC 9110, 12.5.4), lower case, best first; ranges with q=0, a
// malformed q or a malformed tag are dropped.
func parseAcceptLanguage(h string) []string {
	if len(h) > maxAcceptLanguage {
		h = h[:maxAcceptLanguage]
	}
	type weighted struct {
		tag string
		q   float64
	}
	var ranges []weighted
	for part := range strings.SplitSeq(h, ",") {
		if len(ranges) == maxLanguageRanges {
			break
		}
		tag, params, _ := strings.Cut(part, ";")
		tag = strings.ToLower(strings.TrimSpace(tag))
		if tag == "" || (tag != "*" && !validTag(strings.ReplaceAll(tag, "_", "-"))) {
			continue
		}
		q, ok := 1.0, true
		for p := range strings.SplitSeq(params, ";") {
			name, value, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(strings.TrimSpace(name), "q") {
				q, ok = parseQ(strings.TrimSpace(value))
			}
		}
		if !ok || q == 0 {
			continue
		}
		ranges = append(ranges, weighted{tag, q})
	}
	slices.SortStableFunc(ranges, func(a, b weighted) int {
		switch {
		case a.q > b.q:
			return -1
		case a.q < b.q:
			return 1
		}
		return 0
	})
	out := make([]string, len(ranges))
	for i, r := range ranges {
		out[i] = r.tag
	}
	return out
}

// parseQ reads a q-value: "0" to "1" with at most three decimals.
func parseQ(s string) (float64, bool) {
	if s == "" || len(s) > 5 || (s[0] != '0' && s[0] != '1') {
		return 0, false
	}
	if len(s) > 1 && s[1] != '.' {
		return 0, false
	}
	q, err := strconv.ParseFloat(s, 64)
	if err != nil || q < 0 || q > 1 {
		return 0, false
	}
	return q, true
}

// validTag reports whether tag looks like a BCP 47 tag: subtags of one to
// eight ASCII letters or digits joined by "-", the first letters only.
func validTag(tag string) bool {
	if tag == "" || len(tag) > 64 {
		return false
	}
	for i, s := range strings.Split(tag, "-") {
		if len(s) == 0 || len(s) > 8 {
			return false
		}
		for _, c := range []byte(s) {
			isLetter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
			if !isLetter && (i == 0 || c < '0' || c > '9') {
				return false
			}
		}
	}
	return true
}
