package bench

import (
	"maps"
	"slices"
	"strconv"
	"time"
)

// Timeline is what happened to every visitor of a run, as the visitors saw
// it. Times come from Config.Now.
//
// A request is known to reach usher at some moment between when it was sent
// and when its answer came back. Where this matters, the timeline keeps both,
// and Report counts only what is certain (see Result), so that network
// latency never shows as a broken limit. Hand-made timelines may leave the
// "sent" times zero: they then equal the answer times.
type Timeline struct {
	// Start is when the run started (offset zero of the arrival curve).
	Start time.Time `json:"start"`
	// End is when the last visitor left, or when the run stopped.
	End time.Time `json:"end"`
	// Horizon reports that the run stopped at its horizon (or was
	// cancelled) with visitors still there.
	Horizon bool `json:"horizon,omitempty"`
	// Visitors are in order of scheduled arrival.
	Visitors []Visitor `json:"visitors"`
	// Origin is the simulated origin's figures (nil: not simulated).
	Origin *OriginStats `json:"origin,omitempty"`
	// Aggregate says what aggregate mode did (nil: the run was simulated
	// check-in by check-in).
	Aggregate *AggregateStats `json:"aggregate,omitempty"`
	// Learned is what a simulated run teaches the room's next event (nil:
	// not simulated).
	Learned *LearnedStats `json:"learned,omitempty"`
	// Load is the Redis load a simulated run implies (nil: not modelled;
	// see SimConfig.Load).
	Load *LoadStats `json:"load,omitempty"`
}

// Visitor is one virtual visitor's history.
type Visitor struct {
	// ID is sent to usher and the origin as X-Bench-Visitor.
	ID string `json:"id"`
	// Scheduled is the arrival offset the curve gave the visitor.
	Scheduled time.Duration `json:"scheduled"`
	// Arrival is when the visitor sent its first request that got an
	// answer (zero if none did).
	Arrival time.Time `json:"arrival,omitzero"`
	// ArrivalAck is when that first answer came back (zero: Arrival).
	ArrivalAck time.Time `json:"arrival_ack,omitzero"`
	// CheckIns are the waiting answers, in order.
	CheckIns []CheckIn `json:"check_ins,omitempty"`
	// Admitted is when the first origin answer came back (zero: never).
	Admitted time.Time `json:"admitted,omitzero"`
	// AdmittedSent is when the request that got it was sent (zero:
	// Admitted).
	AdmittedSent time.Time `json:"admitted_sent,omitzero"`
	// Requests are the send times of every request the origin answered,
	// the admitting one first. A request that came after the visitor's
	// session ended was admitted anew (see Report).
	Requests []time.Time `json:"requests,omitempty"`
	// RequestAcks are the answer times of Requests, in the same order
	// (empty: the answers came when the requests were sent, as in a
	// simulation).
	RequestAcks []time.Time `json:"request_acks,omitempty"`
	// Abandoned is when a waiting visitor's patience ran out and it left
	// (zero: it did not).
	Abandoned time.Time `json:"abandoned,omitzero"`
	// Requeued counts the times an admitted visitor got a waiting answer
	// instead of the origin: it then waits in line again, as the new
	// visitor usher takes it for, until it is admitted again or its
	// browsing time is over.
	Requeued int `json:"requeued,omitempty"`
	// RequeuedAt is when the first such answer came back.
	RequeuedAt time.Time `json:"requeued_at,omitzero"`
	// Requeues are when each wait in line again began: the first waiting
	// answer after each admission that got one.
	Requeues []time.Time `json:"requeues,omitempty"`
	// Left is when the visitor left, for whatever reason (zero: still
	// there at the end of the timeline).
	Left time.Time `json:"left,omitzero"`
	// GaveUp reports that the visitor left after too many errors in a row.
	GaveUp bool `json:"gave_up,omitempty"`
	// Errors are the failed requests.
	Errors []RequestError `json:"errors,omitempty"`
}

// CheckIn is one waiting answer.
type CheckIn struct {
	// At is when the answer came back.
	At time.Time `json:"at"`
	// Sent is when the request was sent (zero: At).
	Sent time.Time `json:"sent,omitzero"`
	// Position and Ahead are the answer's position and peopleAhead.
	Position int64 `json:"position"`
	Ahead    int64 `json:"ahead"`
	// ETAKnown and ETA are waitTimeKnown and waitTimeSeconds (waitTime,
	// whole minutes, from a usher that gives no seconds).
	ETAKnown bool          `json:"eta_known"`
	ETA      time.Duration `json:"eta"`
	// ETALow and ETAHigh are the announced range of a random room
	// (waitTimeLowSeconds, waitTimeHighSeconds); zero without one.
	ETALow  time.Duration `json:"eta_low,omitempty"`
	ETAHigh time.Duration `json:"eta_high,omitempty"`
	// Refresh is refreshIntervalSeconds.
	Refresh time.Duration `json:"refresh"`
	// Prequeue is isEventPrequeueing: the visitor waits for an event that
	// has not started.
	Prequeue bool `json:"prequeue,omitempty"`
}

// The kinds of RequestError.
const (
	// ErrTransport is a request that got no answer (refused, reset).
	ErrTransport = "transport"
	// ErrTimeout is a request that got no answer in time.
	ErrTimeout = "timeout"
	// ErrStatus is an answer with an unexpected HTTP status.
	ErrStatus = "status"
	// ErrUnexpected is a 200 answer that is neither the origin nor a JSON
	// waiting answer (an HTML waiting page, a reject page).
	ErrUnexpected = "unexpected"
	// ErrBadJSON is a waiting answer whose JSON does not read.
	ErrBadJSON = "bad_json"
)

// RequestError is one failed request.
type RequestError struct {
	// At is when the failure was seen.
	At time.Time `json:"at"`
	// Kind is one of the Err* kinds.
	Kind string `json:"kind"`
	// Status is the HTTP status, if an answer came.
	Status int `json:"status,omitempty"`
	// Detail says more, for people.
	Detail string `json:"detail,omitempty"`
}

// ErrorCounts counts the timeline's errors by kind; an ErrStatus error is
// counted as "status_NNN".
func (tl *Timeline) ErrorCounts() map[string]int {
	out := map[string]int{}
	for i := range tl.Visitors {
		for _, e := range tl.Visitors[i].Errors {
			out[e.key()]++
		}
	}
	return out
}

// ErrorKinds returns the keys of counts, sorted.
func ErrorKinds(counts map[string]int) []string {
	return slices.Sorted(maps.Keys(counts))
}

func (e RequestError) key() string {
	if e.Kind == ErrStatus && e.Status > 0 {
		return "status_" + strconv.Itoa(e.Status)
	}
	return e.Kind
}

// arrivalSent is the earliest moment usher can have seen the visitor.
func (v *Visitor) arrivalSent() time.Time { return v.Arrival }

// arrivalAck is the latest moment usher can have seen the visitor first.
func (v *Visitor) arrivalAck() time.Time {
	if v.ArrivalAck.IsZero() {
		return v.Arrival
	}
	return v.ArrivalAck
}

// admittedSent is the earliest moment usher can have admitted the visitor.
func (v *Visitor) admittedSent() time.Time {
	if v.AdmittedSent.IsZero() {
		return v.Admitted
	}
	return v.AdmittedSent
}

// addRequest records a request the origin answered, sent at sent and
// answered at ack.
func (v *Visitor) addRequest(sent, ack time.Time) {
	if len(v.RequestAcks) == 0 && ack.Equal(sent) {
		v.Requests = append(v.Requests, sent)
		return
	}
	v.RequestAcks = append(v.RequestAcks, v.Requests[len(v.RequestAcks):]...)
	v.Requests = append(v.Requests, sent)
	v.RequestAcks = append(v.RequestAcks, ack)
}

// requestAck is when the answer to Requests[i] came back.
func (v *Visitor) requestAck(i int) time.Time {
	if i < len(v.RequestAcks) {
		return v.RequestAcks[i]
	}
	return v.Requests[i]
}

// sent is the earliest moment usher can have answered c.
func (c CheckIn) sent() time.Time {
	if c.Sent.IsZero() {
		return c.At
	}
	return c.Sent
}
