package gate

import (
	"encoding/json"
	"reflect"
	"testing"
)

func marshalWaiting(t testing.TB, j waitingRoomJSON) string {
	want, err := json.Marshal(struct {
		W waitingRoomJSON `json:"usherWaitingRoom"`
	}{j})
	if err != nil {
		t.Fatal(err)
	}
	return string(want) + "\n"
}

// TestWaitingJSONAsMarshal: the waiting answer's JSON is byte for byte what
// json.Marshal writes, with and without the optional fields, and with
// strings that need escaping.
func TestWaitingJSONAsMarshal(t *testing.T) {
	low, high := int64(5), int64(-15)
	for _, j := range []waitingRoomJSON{
		{},
		{InWaitingRoom: true, WaitTimeKnown: true, WaitTime: 3, WaitTimeSeconds: 170, WaitTimeFormatted: "3 minutes",
			LastUpdated: "2026-05-01T12:00:00Z", RefreshIntervalSeconds: 20, QueueingMethod: "fifo", IsFIFOQueue: true,
			Position: 1234567, PeopleAhead: 1234566},
		{InWaitingRoom: true, WaitTimeLow: &low, WaitTimeHigh: &high, WaitTimeLowSeconds: &low, WaitTimeHighSeconds: &high,
			WaitTimeFormatted: "zwischen 5 und 15 Minuten", QueueingMethod: "random", IsRandomQueue: true},
		{IsEventPrequeueing: true, TimeUntilEventStart: 61, TimeUntilEventStartSeconds: 3600,
			EventName: "Drop <b>&</b> \"sale\"\\ \n\r\t\b\f\x00\x1f\x7f \u2028\u2029 ünïcödé 待つ \xff\xfe end"},
		{WaitTimeFormatted: "約3分", EventName: "\xe2\x80"},
	} {
		want := marshalWaiting(t, j)
		if got := string(appendWaitingJSON(nil, &j)); got != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
}

func FuzzWaitingJSONAsMarshal(f *testing.F) {
	f.Add("about 3 minutes", "2026-05-01T12:00:00Z", "fifo", "Drop <sale>", int64(3), int64(-1), true, 20)
	f.Fuzz(func(t *testing.T, wait, updated, method, event string, n, m int64, known bool, refresh int) {
		j := waitingRoomJSON{InWaitingRoom: known, WaitTimeKnown: !known, WaitTime: n, WaitTimeSeconds: m,
			WaitTimeFormatted: wait, LastUpdated: updated, RefreshIntervalSeconds: refresh, QueueingMethod: method,
			Position: m, PeopleAhead: n, TimeUntilEventStart: n, TimeUntilEventStartSeconds: m, EventName: event}
		if n%2 == 0 {
			j.WaitTimeLow, j.WaitTimeHigh, j.WaitTimeLowSeconds, j.WaitTimeHighSeconds = &n, &m, &m, &n
		}
		if want, got := marshalWaiting(t, j), string(appendWaitingJSON(nil, &j)); got != want {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	})
}

// TestWaitingJSONCoversEveryField sets every field of the waiting answer
// (by reflection, so that a field added later is in it too) and wants
// json.Marshal's bytes: a field appendWaitingJSON does not write fails it.
func TestWaitingJSONCoversEveryField(t *testing.T) {
	var j waitingRoomJSON
	v := reflect.ValueOf(&j).Elem()
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Field(i).Name
		switch f.Kind() {
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(100 + i))
		case reflect.String:
			f.SetString(name + " \"value\"")
		case reflect.Pointer:
			if f.Type().Elem().Kind() != reflect.Int64 {
				t.Fatalf("field %s: a pointer to %s; teach this test and appendWaitingJSON", name, f.Type().Elem())
			}
			n := int64(200 + i)
			f.Set(reflect.ValueOf(&n))
		default:
			t.Fatalf("field %s: kind %s; teach this test and appendWaitingJSON", name, f.Kind())
		}
	}
	if want, got := marshalWaiting(t, j), string(appendWaitingJSON(nil, &j)); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
