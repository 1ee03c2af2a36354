// Package redis is the shared store: a room's counters in Redis, Valkey or
// a Redis Cluster, so that any number of usher nodes share one room.
//
// Every state change is one Lua script call (EVALSHA, falling back to EVAL):
// Admit is one call, Touch is one call whose size grows with the distinct
// seconds of its moves (they are aggregated by cell in Go), and Stats is
// one read-only call (EVALSHA_RO). Scripts take their time from the caller
// (the op's Now), never from the server's clock, and first expire what is
// due at that time. Redis 7 or later (or Valkey) is required.
//
// # Keys
//
// A room's keys share the hash tag {<prefix>:<room>} and are all passed to
// the scripts, so the scripts run unchanged on Redis Cluster:
//
//	{p:room}:m  meta: born, expired-through second, totals, recover_at,
//	            the anchor bucket and the shape of the live-count trees
//	{p:room}:l  live waiting counts per arrival bucket: two counting trees
//	            (before and after an anchor bucket), 64 counts a page
//	            packed as int32, so that the waiters ahead of a bucket cost
//	            one page per level (log64 of the distance to the anchor),
//	            not one read per bucket
//	{p:room}:w  waiting cells: "exp:page" -> packed (bucket, count) records
//	            of the waiters counted in the cell expiring at exp, 64
//	            buckets a page, and "exp" -> the cell's pages
//	{p:room}:a  active cells: expiry second -> count
//	{p:room}:r  admissions per second, for the 61-second rate window, and
//	            "l<second>" -> the unix ms of the second's last admission
//	            (the second leaves the window when that is 60 s old)
//	{p:room}:am:<unix>, {p:room}:ah:<unix>
//	            a minute's and an hour's analytics (see analytics.go),
//	            each expiring when its retention ends
//
// The anchor is the first waiter's bucket, forgotten when nobody waits;
// buckets more than 2^30 s away from it clamp. Cells are expired by walking
// the seconds since the last call (or the fields, after a long idle spell).
// A room's clock is the latest op time it has seen: an op from a node whose
// clock is behind finds what was due by then expired already.
// Nothing is kept per visitor: memory grows with distinct seconds (100,000
// waiters of a flash crowd over 2,000 arrival seconds take about 0.5 MB).
// Every write keeps the room's keys alive for Horizon past the latest cell,
// so an idle room's keys expire on their own. The key ring is kept under
// <prefix>:keys as JSON, without expiry.
//
// # Losing Redis data
//
// A restart without persistence, a flush, or an eviction can lose a room's
// counters while tickets counted in them are still out there. The room must
// not exceed its limits because of it. The rule:
//
//   - The room's meta records born, the time (ms, from the op's clock) at
//     which its counters were created. A room whose keys are partly missing
//     is wiped and created again.
//   - A cell whose counted-at time (Cell.At) is before born was counted in
//     counters that no longer exist: it is never decremented, only added to
//     (as the embedded store does for its lossy spans). That can over-count,
//     never under-count.
//   - The room enters recovery (recover_at, recorded in meta) when the
//     loss is known: a script sees such a cell on a live From (Exp after
//     now, At before born by more than ClockSkew), or this Store saw the
//     room earlier with another born (remembered per room in memory, while
//     its last op is within Horizon), or some of its keys were missing
//     without being about to expire. recover_at is set to born: everything
//     counted before born is gone, and nothing after it. A room whose keys
//     simply expired (idle for Horizon) is new, not recovering.
//   - Until recover_at + SessionDuration + RecoveryMargin the room's
//     concurrency slots are 0: it is held as full while the sessions still
//     running (all counted before the loss, so all ending by then) make
//     themselves counted again through Touch and Admit. Until recover_at +
//     61 s its rate slots are 0. Admit reports those slots as they are
//     (Stats, like the embedded store's, reports no slots: the caller
//     computes them from the limits).
//
// What the rule cannot see: a loss that no surviving Store saw and no
// ticket has shown yet (the first ops after it can admit), a failover to a
// replica that missed the last writes before it (born is unchanged), and
// clocks of usher nodes further apart than ClockSkew.
//
// # Faults
//
// Every call has a Timeout. A connection error, a timeout or a server that
// cannot serve (LOADING, BUSY, CLUSTERDOWN, READONLY, OOM, ...) returns an
// error that wraps usher.Errorf(usher.EUnavailable, "redis: ..."); other
// server errors and malformed answers wrap usher.EInternal.
package redis
