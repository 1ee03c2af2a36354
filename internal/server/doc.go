// Package server holds the small pieces every usher listener shares: Serve
// with graceful shutdown, the request id and panic recovery middleware, the
// client's address, scheme and host as seen through trusted proxies
// (ClientInfo), and Error, which maps a usher.Error to an HTTP answer once at
// the edge: the client sees the message, the log gets the cause and the
// request id.
//
// The package imports only the standard library and the root usher package.
package server
