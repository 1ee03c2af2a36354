package gate

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/usherhq/usher"
)

// TestWaitingPageLanguage: the page is in the visitor's language, else the
// room's default, and says it varies with Accept-Language.
func TestWaitingPageLanguage(t *testing.T) {
	tests := []struct {
		name, accept, roomDefault, wantLang, wantText string
	}{
		{"accept-language", "ja,en;q=0.5", "", "ja-JP", "あなたの順番は12番目です"},
		{"prefix match", "de-CH", "fr-FR", "de-DE", "Sie sind Nummer 12 in der Warteschlange"},
		{"room default", "sv", "fr-FR", "fr-FR", "Vous êtes numéro 12 dans la file"},
		{"en-US last", "", "", "en-US", "You are number 12 in line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newOrigin(t)
			room := testRoom("sale", "/sale", o.URL)
			room.DefaultTemplateLanguage = tt.roomDefault
			room.JSONResponseEnabled = true
			g, _ := newGate(t, Options{Rooms: []*usher.Room{room}, Decider: &fakeDecider{DecideFn: decide(waiting(12))}})
			r := httptest.NewRequest("GET", "/sale", nil)
			r.Header.Set("Accept-Language", tt.accept)
			w := serve(g, r)
			body := w.Body.String()
			if !strings.Contains(body, `<html lang="`+tt.wantLang+`">`) || !strings.Contains(body, tt.wantText) {
				t.Errorf("page not in %s:\n%s", tt.wantLang, body)
			}
			if vary := w.Header().Values("Vary"); len(vary) != 2 || vary[0] != "Accept" || vary[1] != "Accept-Language" {
				t.Errorf("Vary = %q", vary)
			}
		})
	}
}
