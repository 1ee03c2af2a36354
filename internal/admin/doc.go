// Package admin serves usher's admin HTTP API on its own private listener
// (rooms, room status, health) and usher's Prometheus metrics.
//
// Every path except GET /healthz needs an "Authorization: Bearer <token>"
// header; the token is compared in constant time. Errors are JSON of the form
// {"error":{"code":"...","message":"..."}}.
package admin
