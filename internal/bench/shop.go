package bench

import (
	"bytes"
	"html/template"
	"net/http"
	"net/url"
	"path"
	"strings"
)

// product is one item of the demo shop.
type product struct {
	Slug, Name, Blurb, Price string
	Colour                   template.CSS
}

// catalog is the demo shop's stock.
var catalog = []product{
	{"lamp", "Desk lamp", "Warm light for late reading, with a brass switch.", "€39", "#f4c95d"},
	{"kettle", "Kettle", "Boils a litre in under three minutes. Whistles politely.", "€29", "#8fb8de"},
	{"mug", "Stoneware mug", "Hand-glazed, holds a proper cup of tea.", "€12", "#c38d9e"},
	{"chair", "Reading chair", "Deep seat, high back, made to be sat in for hours.", "€249", "#7fb685"},
	{"blanket", "Wool blanket", "Soft, warm and just big enough for two.", "€59", "#e07a5f"},
	{"clock", "Wall clock", "Quiet movement. You will not hear it tick.", "€45", "#9a8c98"},
}

func findProduct(slug string) (product, bool) {
	for _, p := range catalog {
		if p.Slug == slug {
			return p, true
		}
	}
	return product{}, false
}

// cartCookie holds the demo cart: product slugs joined by ".".
const cartCookie = "usher_demo_cart"

// shopPage is the data of every shop page.
type shopPage struct {
	Shop     string
	Base     string // path prefix the shop is served under, without a trailing slash
	Title    string
	Products []product
	Product  product
	Cart     []product
	Kind     string // home, product, cart, missing
}

// shop serves the demo shop under any path prefix: ".../product/SLUG",
// ".../cart" (GET), ".../cart/add" and ".../cart/clear" (POST), and a home
// page for any other path whose last segment has no dot.
func (o *Origin) shop(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	page := shopPage{Shop: o.name(), Products: catalog, Cart: readCart(r)}
	switch {
	case strings.Contains(p, "/product/"):
		i := strings.LastIndex(p, "/product/")
		page.Base = p[:i]
		pr, ok := findProduct(p[i+len("/product/"):])
		if !ok {
			page.Kind, page.Title = "missing", "Not found"
			o.render(w, http.StatusNotFound, page)
			return
		}
		page.Kind, page.Title, page.Product = "product", pr.Name, pr
	case strings.HasSuffix(p, "/cart/add") || strings.HasSuffix(p, "/cart/clear"):
		base, verb := path.Split(p)
		o.changeCart(w, r, strings.TrimSuffix(base, "/cart/"), verb)
		return
	case strings.HasSuffix(p, "/cart"):
		page.Base = strings.TrimSuffix(p, "/cart")
		page.Kind, page.Title = "cart", "Your cart"
	case strings.Contains(path.Base(p), "."):
		page.Base = path.Dir(p)
		page.Kind, page.Title = "missing", "Not found"
		o.render(w, http.StatusNotFound, page)
		return
	default:
		page.Base = strings.TrimSuffix(p, "/")
		page.Kind, page.Title = "home", o.name()
	}
	o.render(w, http.StatusOK, page)
}

// changeCart adds a product to the cart or empties it, then goes to the
// cart page.
func (o *Origin) changeCart(w http.ResponseWriter, r *http.Request, base, verb string) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "use POST", http.StatusMethodNotAllowed)
		return
	}
	var slugs []string
	if verb == "add" {
		for _, pr := range readCart(r) {
			slugs = append(slugs, pr.Slug)
		}
		if pr, ok := findProduct(r.FormValue("product")); ok && len(slugs) < 20 {
			slugs = append(slugs, pr.Slug)
		}
	}
	http.SetCookie(w, &http.Cookie{
		Name: cartCookie, Value: strings.Join(slugs, "."), Path: "/",
		HttpOnly: true, SameSite: http.SameSiteLaxMode, MaxAge: 86400,
	})
	http.Redirect(w, r, base+"/cart", http.StatusSeeOther)
}

// readCart reads the cart cookie, skipping unknown products.
func readCart(r *http.Request) []product {
	c, err := r.Cookie(cartCookie)
	if err != nil {
		return nil
	}
	var out []product
	for _, s := range strings.Split(c.Value, ".") {
		if pr, ok := findProduct(s); ok {
			out = append(out, pr)
		}
	}
	return out
}

func (o *Origin) render(w http.ResponseWriter, status int, page shopPage) {
	var buf bytes.Buffer
	if err := shopTemplate.Execute(&buf, page); err != nil {
		http.Error(w, "render: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

var shopTemplate = template.Must(template.New("shop").Funcs(template.FuncMap{
	"esc": url.PathEscape,
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}{{if ne .Kind "home"}} · {{.Shop}}{{end}}</title>
<style>
body{margin:0;font:16px/1.5 system-ui,sans-serif;color:#222;background:#faf8f5}
header{display:flex;justify-content:space-between;align-items:center;padding:1rem 2rem;background:#2d3142;color:#fff}
header a{color:#fff;text-decoration:none}
main{max-width:960px;margin:2rem auto;padding:0 1rem}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(220px,1fr));gap:1.25rem}
.card{background:#fff;border-radius:10px;box-shadow:0 1px 4px #0002;overflow:hidden;color:inherit;text-decoration:none}
.swatch{height:120px}
.card div.t{padding:.75rem 1rem}
.price{font-weight:600;color:#2d3142}
button{background:#2d3142;color:#fff;border:0;border-radius:6px;padding:.6rem 1.2rem;font-size:1rem;cursor:pointer}
ul.cart{list-style:none;padding:0}ul.cart li{background:#fff;margin:.4rem 0;padding:.6rem 1rem;border-radius:6px;display:flex;justify-content:space-between}
</style></head><body>
<header><a href="{{.Base}}/"><strong>{{.Shop}}</strong></a><a href="{{.Base}}/cart">Cart ({{len .Cart}})</a></header>
<main>
{{- if eq .Kind "home"}}
<h1>Today's sale</h1>
<p>You made it in. Take your time; the queue is behind you.</p>
<div class="grid">{{range .Products}}
<a class="card" href="{{$.Base}}/product/{{esc .Slug}}"><div class="swatch" style="background:{{.Colour}}"></div>
<div class="t"><strong>{{.Name}}</strong><br><span class="price">{{.Price}}</span></div></a>{{end}}
</div>
{{- else if eq .Kind "product"}}
<p><a href="{{.Base}}/">&larr; All products</a></p>
<div class="card"><div class="swatch" style="background:{{.Product.Colour}}"></div>
<div class="t"><h1>{{.Product.Name}}</h1><p>{{.Product.Blurb}}</p><p class="price">{{.Product.Price}}</p>
<form method="post" action="{{.Base}}/cart/add"><input type="hidden" name="product" value="{{.Product.Slug}}"><button>Add to cart</button></form></div></div>
{{- else if eq .Kind "cart"}}
<h1>Your cart</h1>
{{if .Cart}}<ul class="cart">{{range .Cart}}<li><span>{{.Name}}</span><span class="price">{{.Price}}</span></li>{{end}}</ul>
<form method="post" action="{{.Base}}/cart/clear"><button>Empty the cart</button></form>
{{else}}<p>Your cart is empty. <a href="{{.Base}}/">Browse the sale</a>.</p>{{end}}
{{- else}}
<h1>Not found</h1><p>There is nothing here. <a href="{{.Base}}/">Back to the shop</a>.</p>
{{- end}}
</main></body></html>
`))
