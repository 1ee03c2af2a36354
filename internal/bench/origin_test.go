package bench

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestOriginRecordsVisitors(t *testing.T) {
	clock := t0
	o := NewOrigin("Test shop")
	o.Now = func() time.Time { clock = clock.Add(time.Second); return clock }
	get := func(id, accept string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/sale/anything", nil)
		if id != "" {
			r.Header.Set(HeaderVisitor, id)
		}
		if accept != "" {
			r.Header.Set("Accept", accept)
		}
		w := httptest.NewRecorder()
		o.ServeHTTP(w, r)
		return w
	}
	w := get("v1", "application/json")
	if w.Code != 200 || w.Header().Get(HeaderOrigin) != "1" || w.Body.String() != `{"inside":true}`+"\n" ||
		w.Header().Get("Content-Type") != "application/json" {
		t.Errorf("JSON answer: %d %v %q", w.Code, w.Header(), w.Body)
	}
	w = get("v<2>", "text/html")
	if w.Header().Get(HeaderOrigin) != "1" || !strings.Contains(w.Body.String(), "Visitor v&lt;2&gt;.") {
		t.Errorf("HTML answer: %v %q", w.Header(), w.Body)
	}
	get("v1", "")
	get("", "") // the shop: not recorded

	snap := o.Snapshot()
	if len(snap) != 2 || len(snap["v1"]) != 2 || !snap["v1"][0].Equal(t0.Add(time.Second)) ||
		!snap["v1"][1].Equal(t0.Add(3*time.Second)) || !snap["v<2>"][0].Equal(t0.Add(2*time.Second)) {
		t.Errorf("Snapshot = %v", snap)
	}
	snap["v1"][0] = time.Time{} // a copy
	if o.Snapshot()["v1"][0].IsZero() {
		t.Error("Snapshot shares its slices")
	}
	if ids := o.Visitors(); len(ids) != 2 || ids[0] != "v1" {
		t.Errorf("Visitors = %v", ids)
	}
	o.Reset()
	if len(o.Snapshot()) != 0 {
		t.Error("Reset kept records")
	}
}

func TestOriginLatency(t *testing.T) {
	o := NewOrigin("")
	o.Latency = Fixed(30 * time.Millisecond)
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set(HeaderVisitor, "v1")
	start := time.Now()
	o.ServeHTTP(httptest.NewRecorder(), r)
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("answered after %v, want at least 30ms", d)
	}
}

func TestShop(t *testing.T) {
	srv := httptest.NewServer(NewOrigin("Corner shop"))
	defer srv.Close()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.Header.Get(HeaderOrigin) != "1" {
			t.Errorf("GET %s: no %s header", path, HeaderOrigin)
		}
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct {
		path, want string
		status     int
	}{
		{"/", `<a class="card" href="/product/lamp">`, 200},
		{"/sale/", `<a class="card" href="/sale/product/lamp">`, 200},
		{"/sale", `href="/sale/cart">Cart (0)</a>`, 200},
		{"/sale/product/kettle", `<form method="post" action="/sale/cart/add">`, 200},
		{"/sale/product/nothing", "Not found", 404},
		{"/favicon.ico", "Not found", 404},
		{"/sale/cart", "Your cart is empty.", 200},
	} {
		status, body := get(c.path)
		if status != c.status || !strings.Contains(body, c.want) || !strings.Contains(body, "Corner shop") {
			t.Errorf("GET %s = %d, want %d with %q:\n%s", c.path, status, c.status, c.want, body)
		}
	}

	// Add to the cart, then see it.
	resp, err := noRedirect.PostForm(srv.URL+"/sale/cart/add", url.Values{"product": {"mug"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/sale/cart" {
		t.Fatalf("add to cart = %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	req, _ := http.NewRequest("GET", srv.URL+"/sale/cart", nil)
	for _, c := range resp.Cookies() {
		req.AddCookie(c)
	}
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "Stoneware mug") || !strings.Contains(string(b), "Cart (1)") {
		t.Errorf("cart page after adding a mug:\n%s", b)
	}
	if resp, err := http.Get(srv.URL + "/sale/cart/add"); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET cart/add = %v, %v", resp, err)
	}
}
