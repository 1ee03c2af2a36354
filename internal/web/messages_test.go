package web

import (
	"reflect"
	"regexp"
	"slices"
	"testing"
)

var placeholder = regexp.MustCompile(`\{[a-z]+\}`)

// TestCatalogComplete: every language fills every text, with the same
// placeholders as English.
func TestCatalogComplete(t *testing.T) {
	en := reflect.ValueOf(*catalog[0])
	typ := en.Type()
	for _, m := range catalog {
		v := reflect.ValueOf(*m)
		for i := range typ.NumField() {
			f := typ.Field(i)
			if !f.IsExported() {
				continue
			}
			texts, enTexts := []string{}, []string{}
			switch f.Type {
			case reflect.TypeFor[string]():
				texts, enTexts = append(texts, v.Field(i).String()), append(enTexts, en.Field(i).String())
			case reflect.TypeFor[Plural]():
				p, ep := v.Field(i).Interface().(Plural), en.Field(i).Interface().(Plural)
				texts, enTexts = append(texts, p.One, p.Other), append(enTexts, ep.One, ep.Other)
			default:
				t.Fatalf("field %s has type %s", f.Name, f.Type)
			}
			for j, s := range texts {
				if s == "" {
					t.Errorf("%s: %s is empty", m.tag, f.Name)
					continue
				}
				got, want := placeholder.FindAllString(s, -1), placeholder.FindAllString(enTexts[j], -1)
				slices.Sort(got)
				slices.Sort(want)
				// English says "every second" without {n}; others may keep it.
				if f.Name == "CheckEvery" && j == 0 {
					continue
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s: %s %q has placeholders %q, English %q", m.tag, f.Name, s, got, want)
				}
			}
		}
		if m.tag == "" || m.minGroup < 4 || m.group == "" {
			t.Errorf("%s: tag, group or minGroup missing", m.tag)
		}
	}
}

func TestCount(t *testing.T) {
	tests := []struct {
		lang string
		n    int64
		want string
	}{
		{"en-US", 0, "0 minutes"},
		{"en-US", 1, "1 minute"},
		{"en-US", 2, "2 minutes"},
		{"de-DE", 1, "1 Minute"},
		{"de-DE", 21, "21 Minuten"},
		{"fr-FR", 0, "0 minute"},
		{"fr-FR", 1, "1 minute"},
		{"fr-FR", 2, "2 minutes"},
		{"pt-BR", 0, "0 minuto"},
		{"pt-BR", 1, "1 minuto"},
		{"pt-BR", 2, "2 minutos"},
		{"es-ES", 1, "1 minuto"},
		{"es-ES", 0, "0 minutos"},
		{"it-IT", 1, "1 minuto"},
		{"nl-NL", 1, "1 minuut"},
		{"nl-NL", 3, "3 minuten"},
		{"ja-JP", 1, "1分"},
		{"ja-JP", 5, "5分"},
		{"zh-CN", 5, "5 分钟"},
	}
	for _, tt := range tests {
		m := messagesFor(tt.lang)
		if got := m.Count(m.Minutes, tt.n); got != tt.want {
			t.Errorf("%s Count(Minutes, %d) = %q, want %q", tt.lang, tt.n, got, tt.want)
		}
	}
	m := messagesFor("nl-NL")
	if got := m.Count(m.Hours, 2); got != "2 uur" {
		t.Errorf("nl 2 hours = %q", got)
	}
}

func TestNumber(t *testing.T) {
	tests := []struct {
		lang string
		n    int64
		want string
	}{
		{"en-US", 999, "999"},
		{"en-US", 1234, "1,234"},
		{"en-US", 1234567, "1,234,567"},
		{"en-US", -1234, "-1,234"},
		{"de-DE", 1234, "1.234"},
		{"es-ES", 1234, "1234"},
		{"es-ES", 12345, "12.345"},
		{"fr-FR", 1234, "1\u202f234"},
		{"ja-JP", 100000, "100,000"},
		{"pt-BR", 123456, "123.456"},
	}
	for _, tt := range tests {
		if got := messagesFor(tt.lang).Number(tt.n); got != tt.want {
			t.Errorf("%s Number(%d) = %q, want %q", tt.lang, tt.n, got, tt.want)
		}
	}
}

func TestDurationAndRange(t *testing.T) {
	tests := []struct {
		lang      string
		low, high int64
		dur, rng  string
	}{
		{"en-US", 5, 15, "15 minutes", "between 5 and 15 minutes"},
		{"en-US", 0, 3, "3 minutes", "between 0 and 3 minutes"},
		{"en-US", 45, 130, "2 hours 10 minutes", "between 45 minutes and 2 hours 10 minutes"},
		{"en-US", 0, 120, "2 hours", "between 0 minutes and 2 hours"},
		{"en-US", 7, 7, "7 minutes", "about 7 minutes"},
		{"en-US", 0, 0, "less than a minute", "less than a minute"},
		{"en-US", 60, 61, "1 hour 1 minute", "between 1 hour and 1 hour 1 minute"},
		{"de-DE", 5, 15, "15 Minuten", "zwischen 5 und 15 Minuten"},
		{"de-DE", 30, 90, "1 Stunde 30 Minuten", "zwischen 30 Minuten und 1 Stunde 30 Minuten"},
		{"es-ES", 5, 61, "1 hora y 1 minuto", "entre 5 minutos y 1 hora y 1 minuto"},
		{"fr-FR", 1, 2, "2 minutes", "entre 1 et 2 minutes"},
		{"ja-JP", 5, 15, "15分", "5～15分"},
		{"ja-JP", 45, 130, "2時間10分", "45分～2時間10分"},
		{"zh-CN", 5, 15, "15 分钟", "5 至 15 分钟"},
		{"zh-CN", 0, 0, "不到 1 分钟", "不到 1 分钟"},
	}
	for _, tt := range tests {
		m := messagesFor(tt.lang)
		if got := m.Duration(tt.high); got != tt.dur {
			t.Errorf("%s Duration(%d) = %q, want %q", tt.lang, tt.high, got, tt.dur)
		}
		if got := m.Range(tt.low, tt.high); got != tt.rng {
			t.Errorf("%s Range(%d, %d) = %q, want %q", tt.lang, tt.low, tt.high, got, tt.rng)
		}
	}
}

func TestFormatMinutes(t *testing.T) {
	for n, want := range map[int64]string{0: "less than a minute", 1: "1 minute", 3: "3 minutes", 60: "1 hour",
		61: "1 hour 1 minute", 125: "2 hours 5 minutes", 120: "2 hours"} {
		if got := FormatMinutes(n); got != want {
			t.Errorf("FormatMinutes(%d) = %q, want %q", n, got, want)
		}
	}
}
