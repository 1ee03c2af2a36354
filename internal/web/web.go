// Package web holds usher's visitor-facing pages and their static assets,
// embedded in the binary: the waiting page (position, estimated wait,
// progress, a refresh that works without JavaScript; with it, a live page
// that checks in with the room's JSON at the ticket's check-in times,
// updates itself in place and notifies the visitor who asks; see
// LiveData), the pre-queue page (an event that has not started, with a
// countdown to it), the reject page (the room is closed) and the challenge
// page (a proof of work the browser solves before joining the line; it
// needs JavaScript). Pages are html/template files fed a PageData; a folder
// can override any of them (New).
//
// The default pages are written in several languages (Languages); Language
// picks one from the visitor's Accept-Language and the room's default, and
// PageData.Lang carries it to the page. An operator's own page is a
// Cloudflare-compatible mustache template (NewCustom, Template.Render; the
// variables are listed in Vars and TEMPLATES.md).
//
// The pages work inside an iframe: no script touches the top window and
// this package sets no X-Frame-Options.
//
// The pages make no external requests: styles and the script are inline,
// there are no web fonts, and the icon is a data: URL (so browsers do not
// fetch /favicon.ico through the waiting room). The one exception is the
// challenge page's Web Worker, /__usher/assets/pow.js, from usher itself.
package web

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// The pages Render knows.
const (
	// PageWaiting is the waiting page.
	PageWaiting = "waiting"
	// PageReject is the page of a room that lets no new visitor in.
	PageReject = "reject"
	// PagePrequeue is the page of a visitor waiting for an event to start
	// (PageData.Prequeue, EventName, EventStart).
	PagePrequeue = "prequeue"
	// PageChallenge is the proof-of-work page of a new visitor
	// (PageData.Challenge, Difficulty, ChallengeCookie).
	PageChallenge = "challenge"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// Pages is a parsed set of page templates and the static assets beside
// them. It is safe for concurrent use.
type Pages struct {
	tmpl   *template.Template
	assets fs.FS
}

// New returns the embedded pages, overridden by dir when dir is not empty:
// every dir/*.html replaces the embedded template of the same name
// (waiting.html, prequeue.html, reject.html, challenge.html which also
// defines its script "powscript", layout.html which defines the
// shared "head", "style" and "footer", script.html which defines "script"),
// and files under dir/assets are served before the embedded
// assets. Each page is rendered once with sample data, so a broken template
// fails here and not in front of a visitor.
func New(dir string) (*Pages, error) {
	t, err := template.ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("parse embedded templates: %w", err)
	}
	embedded, err := fs.Sub(assetFS, "assets")
	if err != nil {
		return nil, err
	}
	p := &Pages{tmpl: t, assets: embedded}
	if dir != "" {
		files, err := filepath.Glob(filepath.Join(dir, "*.html"))
		if err != nil {
			return nil, fmt.Errorf("list templates in %q: %w", dir, err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("read template: %w", err)
			}
			if _, err := t.New(filepath.Base(f)).Parse(string(b)); err != nil {
				return nil, fmt.Errorf("parse template %q: %w", f, err)
			}
		}
		p.assets = overlay{top: os.DirFS(filepath.Join(dir, "assets")), base: embedded}
	}
	sample := PageData{Lang: DefaultLanguage, RoomID: "sample", RoomName: "Sample", Position: 3, PeopleAhead: 2,
		WaitKnown: true, WaitMinutes: 2, RefreshSeconds: 20, LastUpdated: time.Unix(0, 0),
		QueueingMethod: "fifo", Progress: 0.5, EventName: "Sample", EventStart: time.Unix(3600, 0),
		Challenge: "sample.challenge", Difficulty: 18}
	for _, page := range []string{PageWaiting, PagePrequeue, PageReject, PageChallenge} {
		if err := p.Render(io.Discard, page, sample); err != nil {
			return nil, err
		}
	}
	return p, nil
}

var defaultPages = sync.OnceValue(func() *Pages {
	p, err := New("")
	if err != nil {
		panic(err) // the embedded templates are part of the build; a test renders them
	}
	return p
})

// Default returns the embedded pages, parsed once.
func Default() *Pages { return defaultPages() }

// Render renders page (PageWaiting, PagePrequeue, PageReject,
// PageChallenge) of the embedded pages to w.
func Render(w io.Writer, page string, data PageData) error {
	return Default().Render(w, page, data)
}

// Render renders page (PageWaiting, PagePrequeue, PageReject,
// PageChallenge) with data to w, in data.Lang (en-US when empty or unknown; an unknown tag is
// matched as by SupportedLanguage). Nothing is written when the template
// fails.
func (p *Pages) Render(w io.Writer, page string, data PageData) error {
	t := p.tmpl.Lookup(page + ".html")
	if t == nil {
		return fmt.Errorf("render: no page %q", page)
	}
	data.Lang = messagesFor(data.Lang).tag
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return fmt.Errorf("render %s: %w", page, err)
	}
	_, err := buf.WriteTo(w)
	return err
}

// Assets returns the static assets: the embedded ones, under the override
// folder's assets/ when there is one. Pages may link them under
// /__usher/assets/.
func (p *Pages) Assets() fs.FS { return p.assets }

// overlay opens names in top first, then in base.
type overlay struct{ top, base fs.FS }

func (o overlay) Open(name string) (fs.File, error) {
	f, err := o.top.Open(name)
	if err == nil {
		return f, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return o.base.Open(name)
}
