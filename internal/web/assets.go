package web

import (
	"bytes"
	"io"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

// AssetHandler serves the static assets, named by the request path relative
// to where the handler is mounted (use http.StripPrefix). Directories are
// not listed; missing files are 404. Assets may be cached for an hour.
func (p *Pages) AssetHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
		if !fs.ValidPath(name) || name == "." {
			http.NotFound(w, r)
			return
		}
		f, err := p.assets.Open(name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil || st.IsDir() {
			http.NotFound(w, r)
			return
		}
		content, ok := f.(io.ReadSeeker)
		if !ok {
			b, err := io.ReadAll(f)
			if err != nil {
				http.Error(w, "read error", http.StatusInternalServerError)
				return
			}
			content = bytes.NewReader(b)
		}
		w.Header().Set("Cache-Control", "public, max-age=3600")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		http.ServeContent(w, r, st.Name(), st.ModTime(), content) // embedded files: zero time, no Last-Modified
	})
}
