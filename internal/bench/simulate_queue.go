package bench

import (
	"container/heap"
	"time"
)

// simCheckIn is a CheckIn kept small and free of pointers on its way to
// the visitor's record (a large crowd makes millions).
type simCheckIn struct {
	at       time.Duration // since the start
	position int64
	i        int32 // the visitor
	eta      int32 // whole seconds; -1: unknown; simDone: see simRecorder
	refresh  int32 // whole seconds
	// low and high are a random room's announced range, whole seconds
	// (0: none).
	low, high int32
	// held is how long the check-in was held before its answer
	// (Engine.Hold), in ms: it was sent that long before at.
	held int32
}

// simDone in simCheckIn.eta says that the visitor stopped waiting.
const simDone = -2

// simRecorder builds the visitors' CheckIns on a goroutine of its own,
// beside the run: the run writes its check-ins one after the other into
// chunks and hands them over (so that it writes memory in order), and the
// recorder files them by visitor and makes each visitor's CheckIns at once
// when it stops waiting. Only the recorder writes Visitor.CheckIns.
type simRecorder struct {
	visitors []Visitor
	start    time.Time
	compact  bool // keep only the check-ins Report reads
	chunk    []simCheckIn
	full     chan []simCheckIn
	free     chan []simCheckIn
	done     chan struct{}
}

const simChunk = 1 << 12

func newSimRecorder(visitors []Visitor, start time.Time, compact bool) *simRecorder {
	r := &simRecorder{
		visitors: visitors,
		start:    start,
		compact:  compact,
		chunk:    make([]simCheckIn, 0, simChunk),
		full:     make(chan []simCheckIn, 16),
		free:     make(chan []simCheckIn, 16),
		done:     make(chan struct{}),
	}
	go r.file()
	return r
}

// add records c.
func (r *simRecorder) add(c simCheckIn) {
	r.chunk = append(r.chunk, c)
	if len(r.chunk) == cap(r.chunk) {
		r.full <- r.chunk
		select {
		case r.chunk = <-r.free:
		default:
			r.chunk = make([]simCheckIn, 0, simChunk)
		}
	}
}

// close hands over what is left and waits until every visitor's CheckIns
// are made.
func (r *simRecorder) close() {
	r.full <- r.chunk
	r.chunk = nil
	close(r.full)
	<-r.done
}

func (r *simRecorder) file() {
	defer close(r.done)
	byVisitor := make([][]simCheckIn, len(r.visitors))
	for chunk := range r.full {
		for _, c := range chunk {
			if c.eta == simDone {
				r.build(c.i, byVisitor[c.i])
				byVisitor[c.i] = nil
				continue
			}
			byVisitor[c.i] = r.keep(byVisitor[c.i], c)
		}
		select {
		case r.free <- chunk[:0]:
		default:
		}
	}
	for i, cs := range byVisitor {
		r.build(int32(i), cs)
	}
}

// keep files c after cs. Compact keeps the first check-in, the first with
// a known wait, and the latest: all that Report reads.
func (r *simRecorder) keep(cs []simCheckIn, c simCheckIn) []simCheckIn {
	if !r.compact || len(cs) == 0 {
		return append(cs, c)
	}
	known := false
	for _, k := range cs {
		known = known || k.eta >= 0
	}
	switch {
	case !known && c.eta >= 0:
		// Keep the latest before it only if it is the first.
		if len(cs) > 1 {
			cs = cs[:1]
		}
		return append(cs, c)
	case len(cs) == 1 || (len(cs) == 2 && known && cs[0].eta < 0):
		return append(cs, c)
	default:
		cs[len(cs)-1] = c
		return cs
	}
}

// build sets visitor i's CheckIns.
func (r *simRecorder) build(i int32, cs []simCheckIn) {
	if len(cs) == 0 {
		return
	}
	out := make([]CheckIn, len(cs))
	for k, c := range cs {
		t := r.start.Add(c.at)
		out[k] = CheckIn{At: t, Sent: t.Add(-time.Duration(c.held) * time.Millisecond), Position: c.position, Ahead: max(c.position-1, 0), Refresh: time.Duration(c.refresh) * time.Second}
		if c.eta >= 0 {
			out[k].ETAKnown, out[k].ETA = true, time.Duration(c.eta)*time.Second
			if c.high > 0 {
				out[k].ETALow, out[k].ETAHigh = time.Duration(c.low)*time.Second, time.Duration(c.high)*time.Second
			}
		}
	}
	r.visitors[i].CheckIns = out
}

// simEvent is a visitor's next action.
type simEvent struct {
	at  time.Duration // since the start
	seq uint64        // tie-break: the order actions were scheduled in
	i   int32         // the visitor
	act simAct
}

// simQueue is a min-heap of actions by time, then by scheduling order.
// Each visitor has at most one action in it.
type simQueue []simEvent

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(simEvent)) }
func (q *simQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// simNext is a visitor's next action: at, or when fixed, a fixed delay
// after now (a check-in or a retry).
type simNext struct {
	at    time.Duration
	act   simAct
	fixed bool
}

// simAgenda orders the visitors' actions by time, then by the order they
// were scheduled in. Most actions are check-ins a refresh interval ahead,
// and the refresh intervals take few values (whole seconds): actions
// scheduled a fixed delay ahead go to one FIFO queue per delay, already in
// order, and the others to a heap. The queues' heads are kept in a heap of
// their own (a few hundred queues at most), so the next action is the
// least of two heap tops. (A heap of every action spends most of a large
// run on cache misses.)
type simAgenda struct {
	fifos   []simFIFO
	byDelay map[time.Duration]int // delay -> index in fifos
	order   []int                 // indices of the non-empty fifos, a heap by head
	heap    simQueue
}

// simMaxFIFOs bounds the FIFO queues; further delays go to the heap.
const simMaxFIFOs = 1024

// simAhead is how many actions of a FIFO queue ahead touch visits.
const simAhead = 8

// touch reads, once every simAhead actions of f, the state of the
// visitors of the simAhead actions after the next simAhead, so that it is
// in the cache when their turn comes: the reads are independent, so the
// memory serves them together, where a visitor read at its turn waits for
// memory alone (the run spends most of its time waiting for memory).
func (s *sim) touch(f *simFIFO) {
	if f.head%simAhead != 0 || f.head+2*simAhead > len(f.evs) {
		return
	}
	sum := 0
	for _, ev := range f.evs[f.head+simAhead : f.head+2*simAhead] {
		v := &s.vs[ev.i]
		sum += v.errs + int(v.ticket.Cell)
	}
	s.sink += sum
}

type simFIFO struct {
	delay time.Duration
	evs   []simEvent
	head  int
	pos   int // index in simAgenda.order; -1: empty
}

func before(a, b *simEvent) bool { return a.at < b.at || (a.at == b.at && a.seq < b.seq) }

// push adds ev, scheduled delay ahead of now when fixed. Actions are
// pushed in the order of their seq, at or after the last one taken.
func (ag *simAgenda) push(ev simEvent, fixed bool, delay time.Duration) {
	if fixed {
		k, ok := ag.byDelay[delay]
		if !ok && len(ag.fifos) < simMaxFIFOs {
			if ag.byDelay == nil {
				ag.byDelay = map[time.Duration]int{}
			}
			k, ok = len(ag.fifos), true
			ag.fifos = append(ag.fifos, simFIFO{delay: delay, pos: -1})
			ag.byDelay[delay] = k
		}
		if ok {
			f := &ag.fifos[k]
			f.evs = append(f.evs, ev)
			if f.pos < 0 {
				// Its head is the latest action pushed: it goes last, then up.
				f.pos = len(ag.order)
				ag.order = append(ag.order, k)
				ag.up(f.pos)
			}
			return
		}
	}
	heap.Push(&ag.heap, ev)
}

// headBefore reports whether the head of fifo a comes before fifo b's.
func (ag *simAgenda) headBefore(a, b int) bool {
	fa, fb := &ag.fifos[a], &ag.fifos[b]
	return before(&fa.evs[fa.head], &fb.evs[fb.head])
}

func (ag *simAgenda) swap(i, j int) {
	ag.order[i], ag.order[j] = ag.order[j], ag.order[i]
	ag.fifos[ag.order[i]].pos = i
	ag.fifos[ag.order[j]].pos = j
}

func (ag *simAgenda) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !ag.headBefore(ag.order[i], ag.order[p]) {
			return
		}
		ag.swap(i, p)
		i = p
	}
}

func (ag *simAgenda) down(i int) {
	n := len(ag.order)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && ag.headBefore(ag.order[r], ag.order[l]) {
			c = r
		}
		if !ag.headBefore(ag.order[c], ag.order[i]) {
			return
		}
		ag.swap(i, c)
		i = c
	}
}

// peek returns the next action and where it is (-1: the heap).
func (ag *simAgenda) peek() (simEvent, int, bool) {
	var best *simEvent
	src := -1
	if len(ag.heap) > 0 {
		best = &ag.heap[0]
	}
	if len(ag.order) > 0 {
		k := ag.order[0]
		f := &ag.fifos[k]
		if best == nil || before(&f.evs[f.head], best) {
			best, src = &f.evs[f.head], k
		}
	}
	if best == nil {
		return simEvent{}, 0, false
	}
	return *best, src, true
}

// pop takes the action peek returned.
func (ag *simAgenda) pop(src int) {
	if src < 0 {
		heap.Pop(&ag.heap)
		return
	}
	f := &ag.fifos[src]
	f.head++
	switch {
	case f.head == len(f.evs):
		f.evs, f.head = f.evs[:0], 0
		// Out of the order: the last takes its place.
		i, last := f.pos, len(ag.order)-1
		f.pos = -1
		if i != last {
			ag.order[i] = ag.order[last]
			ag.fifos[ag.order[i]].pos = i
		}
		ag.order = ag.order[:last]
		if i != last {
			ag.down(i)
			ag.up(i)
		}
		return
	case f.head >= 1024 && 2*f.head >= len(f.evs):
		n := copy(f.evs, f.evs[f.head:])
		f.evs, f.head = f.evs[:n], 0
	}
	ag.down(f.pos)
}
