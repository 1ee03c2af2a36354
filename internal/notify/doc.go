// Package notify sends usher's events out: an in-process bus that
// delivers each event to the webhooks that want it, signed and retried
// from a bounded queue per webhook, and to the subscribers of the admin
// listener's event stream (server-sent events).
//
// Publish never blocks: a webhook whose queue is full drops the event and
// counts it, and a stream subscriber that falls behind is cut off and
// counted, so that a slow or dead receiver never slows a decision nor
// grows memory. Per-visitor events are opt-in and sampled (SampleVisitor
// answers at once, without allocating, while nothing wants them).
//
// The signature, the payloads and the delivery rules are described in
// docs/webhooks.md.
package notify
