// Package bench measures usher: live, over real HTTP, and before the event,
// on simulated time with the same admission engine.
//
// Its parts:
//
//   - Origin, the sample site behind usher: it records when it saw each
//     virtual visitor (header X-Bench-Visitor) and marks its answers with
//     X-Bench-Origin, and serves a small demo shop to people.
//   - Run, the load generator: virtual visitors, each with its own cookie
//     jar, arrive on a curve (ParseArrivals), wait in the queue honouring
//     usher's refresh interval, may abandon, and browse once admitted
//     (VisitorModel, Dist). It returns a Timeline of what they saw.
//   - Load, a closed-loop load of one kind of request (an admitted
//     visitor's, a new visitor's, a check-in, or a plain proxy's), for the
//     throughput comparison.
//   - Simulate, the same visitors against internal/admission's engine on
//     simulated time, no network: hours of an event in seconds. It fills
//     the same Timeline, so the same Report applies.
//   - Report, Series and SimSummary, the arithmetic over a Timeline:
//     active users and admissions per 60 s against the room's limits,
//     utilisation while a queue exists, FIFO inversions, wait percentiles
//     (by arrival minute too) and the error of the announced wait, what
//     bound the room, the queue's peak and drain, and warnings when a run
//     measured nothing; WriteSummary, the same in a few sentences for
//     people; and PlotSVG, the plot of it.
//   - Progress, what Run and Simulate report while they run, for a
//     progress line.
//
// The package imports the standard library, the root usher package and
// the engine; the store a simulation runs on is the caller's.
package bench
