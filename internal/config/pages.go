package config

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/usherhq/usher/internal/web"
)

// loadPages resolves each custom_page_html, of a room or an event, relative
// to dir (absolute) unless absolute, checks that web.LoadCustom parses it,
// stores the absolute path back, and returns the problems met. An empty
// path is left to Validate.
func (c *Config) loadPages(dir string) report {
	var r report
	for i := range c.Rooms {
		rm := &c.Rooms[i]
		at := roomLoc(i, rm.ID)
		if p := rm.CustomPageHTML; strings.TrimSpace(p) != "" {
			rm.CustomPageHTML = loadPage(&r, dir, p, at.field("custom_page_html"))
		}
		for j := range rm.Events {
			e := &rm.Events[j]
			p := e.Overrides.CustomPageHTML
			if p == nil || strings.TrimSpace(*p) == "" {
				continue
			}
			eat := at.field("events").index(j)
			eat.event = e.Name
			abs := loadPage(&r, dir, *p, eat.field("custom_page_html"))
			e.Overrides.CustomPageHTML = &abs
		}
	}
	return r
}

// loadPage returns the absolute path of the page name, relative to dir
// unless absolute, adding a problem at at when the page cannot be read or
// parsed. Messages name the file as written, so they read the same on
// every machine.
func loadPage(r *report, dir, name string, at loc) string {
	abs := name
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(dir, abs)
	}
	_, err := web.LoadCustom(abs)
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrNotExist):
		r.add(0, at, "%s does not exist (a relative path is relative to the config file's directory)", name)
	default:
		msg := strings.ReplaceAll(err.Error(), abs, name)
		if !strings.HasPrefix(msg, name) {
			msg = name + ": " + strings.TrimPrefix(msg, "read custom page: ")
		}
		r.add(0, at, "%s", msg)
	}
	return abs
}
