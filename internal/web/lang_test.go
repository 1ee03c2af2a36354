package web

import (
	"slices"
	"strings"
	"testing"
)

func TestLanguage(t *testing.T) {
	tests := []struct {
		name, accept, roomDefault, want string
	}{
		{"empty header, no default", "", "", "en-US"},
		{"empty header, room default", "", "fr-FR", "fr-FR"},
		{"room default by prefix", "", "ja", "ja-JP"},
		{"room default unknown", "", "tlh", "en-US"},
		{"room default malformed", "", "fr_FR!", "en-US"},
		{"exact", "de-DE", "", "de-DE"},
		{"case-insensitive", "DE-de", "", "de-DE"},
		{"prefix", "de", "", "de-DE"},
		{"other region", "de-AT", "", "de-DE"},
		{"pt-PT gets pt-BR", "pt-PT", "", "pt-BR"},
		{"underscore", "pt_BR", "", "pt-BR"},
		{"order when q equal", "it, fr", "", "it-IT"},
		{"q-values", "fr;q=0.5, nl;q=0.9, en;q=0.7", "", "nl-NL"},
		{"q=1 beats implicit order", "es;q=0.8, ja", "", "ja-JP"},
		{"q uppercase and spaces", "fr ; Q=0.2 , de ; q=0.3", "", "de-DE"},
		{"q=0 excluded", "ja;q=0, de;q=0.1", "", "de-DE"},
		{"all q=0 falls to default", "ja;q=0", "es-ES", "es-ES"},
		{"unknown then known", "tlh, sv, nl;q=0.5", "", "nl-NL"},
		{"unknown falls to room default", "sv-SE, fi", "it-IT", "it-IT"},
		{"unknown, unknown default", "sv-SE", "xx", "en-US"},
		{"wildcard leaves it to the room", "*, de;q=0.5", "fr", "fr-FR"},
		{"wildcard after a match", "ja, *;q=0.1", "fr", "ja-JP"},
		{"zh-CN", "zh-CN", "", "zh-CN"},
		{"zh", "zh", "", "zh-CN"},
		{"zh-Hans-CN", "zh-Hans-CN", "", "zh-CN"},
		{"zh-TW not served Simplified", "zh-TW, en;q=0.5", "", "en-US"},
		{"zh-Hant", "zh-Hant", "de", "de-DE"},
		{"zh-TW then zh", "zh-TW,zh;q=0.9", "", "zh-CN"},
		{"malformed q ignored", "de;q=high, fr;q=1.5, it;q=0.1234, es;q=-1, nl;q=0.3", "", "nl-NL"},
		{"malformed tags ignored", "d e, <script>, 12, ja-JP-toolongsubtag, fr", "", "fr-FR"},
		{"garbage", ";;;,,,=q;", "es", "es-ES"},
		{"only commas", ",,,", "", "en-US"},
		{"browser header", "en-GB,en;q=0.9,de;q=0.8", "ja", "en-US"},
		{"chrome de", "de-DE,de;q=0.9,en-US;q=0.8,en;q=0.7", "", "de-DE"},
		{"other params", "fr;level=1;q=0.5, it;q=0.4", "", "fr-FR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Language(tt.accept, tt.roomDefault); got != tt.want {
				t.Errorf("Language(%q, %q) = %q, want %q", tt.accept, tt.roomDefault, got, tt.want)
			}
		})
	}
}

func TestLanguageLongHeader(t *testing.T) {
	// Past the ranges and bytes usher reads, a language is not seen.
	long := strings.Repeat("xx, ", 40) + "de"
	if got := Language(long, "fr"); got != "fr-FR" {
		t.Errorf("range 41 was read: %q", got)
	}
	long = strings.Repeat("x", 2000) + ", de"
	if got := Language(long, ""); got != "en-US" {
		t.Errorf("byte 2000 was read: %q", got)
	}
}

func TestSupportedLanguage(t *testing.T) {
	for _, tag := range Languages() {
		if got, ok := SupportedLanguage(tag); !ok || got != tag {
			t.Errorf("SupportedLanguage(%q) = %q, %v", tag, got, ok)
		}
	}
	for _, tag := range []string{"", "*", "x", "sv", "en-", "-en", "zh-TW", "de DE"} {
		if got, ok := SupportedLanguage(tag); ok {
			t.Errorf("SupportedLanguage(%q) = %q, want none", tag, got)
		}
	}
	want := []string{"en-US", "de-DE", "es-ES", "fr-FR", "it-IT", "ja-JP", "nl-NL", "pt-BR", "zh-CN"}
	if got := Languages(); !slices.Equal(got, want) {
		t.Errorf("Languages() = %q", got)
	}
}

func FuzzLanguage(f *testing.F) {
	f.Add("de-DE,de;q=0.9,en;q=0.7", "fr")
	f.Add("*;q=0.0001,", "")
	f.Fuzz(func(t *testing.T, accept, def string) {
		got := Language(accept, def)
		if !slices.Contains(Languages(), got) {
			t.Fatalf("Language(%q, %q) = %q, not a supported language", accept, def, got)
		}
	})
}
