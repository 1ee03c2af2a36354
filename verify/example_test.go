package verify_test

import (
	"fmt"
	"log"
	"net/http"

	"github.com/usherhq/usher/verify"
)

// An origin protects its checkout: only visitors usher admitted to the
// room "sale" reach it; a browser without a valid token goes to the
// waiting room.
func ExampleVerifier_Middleware() {
	v, err := verify.New(verify.Options{
		JWKSURL: "https://shop.example/__usher/jwks.json",
		Room:    "sale",
		RoomURL: "https://shop.example/",
	})
	if err != nil {
		log.Fatal(err)
	}
	checkout := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := verify.ClaimsFrom(r.Context())
		fmt.Fprintf(w, "welcome, visitor %s; you waited %s\n", c.Subject, c.Waited)
	})
	http.Handle("/checkout/", v.Middleware(checkout))
}

// After the order is placed, the origin ends the visitor's session so
// that the next visitor in line gets the place.
func ExampleRevoke() {
	http.HandleFunc("/checkout/done", func(w http.ResponseWriter, r *http.Request) {
		verify.Revoke(w)
		fmt.Fprintln(w, "thank you for your order")
	})
}
