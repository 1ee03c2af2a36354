// Package admin serves usher's admin HTTP API on its own private listener,
// usher's Prometheus metrics, and the client the CLI's verbs use.
//
// The API under /api/v1 reads and changes the running rooms: their
// settings, events and rules (GET, PATCH, POST, DELETE), every room's live
// status, and the audit log. A change is kept in the store as the runtime
// document, over the config file (Layers): it is decoded and validated by
// the config package exactly as the file is, carries optimistic
// concurrency (ETag and If-Match), and is recorded in the audit log with
// its token's name and the values before and after, in the same atomic
// store operation. Every node applies it within a second. A room's
// events and rules are lists served by one generic handler (lists.go,
// listKind[T]; events.go and rules.go say what differs).
//
// The dashboard (GET /, dashboard.go) is a page embedded in the binary
// that draws every room from GET /api/v1/live, a stream of server-sent
// events (live.go), and edits rooms, their events and rules through the
// same API as the CLI, and shows the audit log.
//
// GET /api/v1/stream is the rooms' events (internal/notify's bus, the
// same events the webhooks get) as server-sent events; a change made
// through the API is handed to Options.Changed for its
// room.settings_changed event.
//
// Every path except GET /healthz and the dashboard's files needs an
// "Authorization: Bearer <token>" header; the token is compared in constant time. A read token may GET
// only. Errors are JSON of the form
// {"error":{"code":"...","message":"...","field":"..."}}.
package admin
