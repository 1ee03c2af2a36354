// Package bench measures usher from the outside, over real HTTP only.
//
// It has three parts:
//
//   - Origin, the sample site behind usher: it records when it saw each
//     virtual visitor (header X-Bench-Visitor) and marks its answers with
//     X-Bench-Origin, and serves a small demo shop to people.
//   - Run, the load generator: virtual visitors, each with its own cookie
//     jar, arrive on a curve (ParseArrivals), wait in the queue honouring
//     usher's refresh interval, may abandon, and browse once admitted
//     (VisitorModel, Dist). It returns a Timeline of what they saw.
//   - Report and Series, the arithmetic over a Timeline: active users and
//     admissions per 60 s against the room's limits, utilisation while a
//     queue exists, FIFO inversions, wait percentiles and the error of the
//     announced wait.
//
// The package imports only the standard library and the root usher package.
package bench
