package gate

import (
	"strconv"
	"unicode/utf8"
)

// appendWaitingJSON appends {"usherWaitingRoom":j} and a newline, the
// bytes encoding/json's Marshal writes for it (field order, omitempty,
// HTML-safe string escaping), without its reflection: a waiter's check-in
// renders it on every answer. TestWaitingJSONAsMarshal and
// FuzzWaitingJSONAsMarshal hold it to json.Marshal.
func appendWaitingJSON(b []byte, j *waitingRoomJSON) []byte {
	b = append(b, `{"usherWaitingRoom":{"inWaitingRoom":`...)
	b = strconv.AppendBool(b, j.InWaitingRoom)
	b = append(b, `,"waitTimeKnown":`...)
	b = strconv.AppendBool(b, j.WaitTimeKnown)
	b = append(b, `,"waitTime":`...)
	b = strconv.AppendInt(b, j.WaitTime, 10)
	b = append(b, `,"waitTimeSeconds":`...)
	b = strconv.AppendInt(b, j.WaitTimeSeconds, 10)
	for _, f := range [...]struct {
		name string
		v    *int64
	}{
		{`,"waitTimeLow":`, j.WaitTimeLow}, {`,"waitTimeHigh":`, j.WaitTimeHigh},
		{`,"waitTimeLowSeconds":`, j.WaitTimeLowSeconds}, {`,"waitTimeHighSeconds":`, j.WaitTimeHighSeconds},
	} {
		if f.v != nil {
			b = append(b, f.name...)
			b = strconv.AppendInt(b, *f.v, 10)
		}
	}
	b = append(b, `,"waitTimeFormatted":`...)
	b = appendJSONString(b, j.WaitTimeFormatted)
	b = append(b, `,"queueIsFull":`...)
	b = strconv.AppendBool(b, j.QueueIsFull)
	b = append(b, `,"queueAll":`...)
	b = strconv.AppendBool(b, j.QueueAll)
	b = append(b, `,"lastUpdated":`...)
	b = appendJSONString(b, j.LastUpdated)
	b = append(b, `,"refreshIntervalSeconds":`...)
	b = strconv.AppendInt(b, int64(j.RefreshIntervalSeconds), 10)
	b = append(b, `,"queueingMethod":`...)
	b = appendJSONString(b, j.QueueingMethod)
	b = append(b, `,"isFIFOQueue":`...)
	b = strconv.AppendBool(b, j.IsFIFOQueue)
	b = append(b, `,"isRandomQueue":`...)
	b = strconv.AppendBool(b, j.IsRandomQueue)
	b = append(b, `,"position":`...)
	b = strconv.AppendInt(b, j.Position, 10)
	b = append(b, `,"peopleAhead":`...)
	b = strconv.AppendInt(b, j.PeopleAhead, 10)
	b = append(b, `,"isEventPrequeueing":`...)
	b = strconv.AppendBool(b, j.IsEventPrequeueing)
	b = append(b, `,"timeUntilEventStart":`...)
	b = strconv.AppendInt(b, j.TimeUntilEventStart, 10)
	b = append(b, `,"timeUntilEventStartSeconds":`...)
	b = strconv.AppendInt(b, j.TimeUntilEventStartSeconds, 10)
	if j.EventName != "" {
		b = append(b, `,"eventName":`...)
		b = appendJSONString(b, j.EventName)
	}
	if j.DrawID != "" {
		b = append(b, `,"drawId":`...)
		b = appendJSONString(b, j.DrawID)
	}
	if j.DrawEntry != "" {
		b = append(b, `,"drawEntry":`...)
		b = appendJSONString(b, j.DrawEntry)
	}
	return append(b, "}}\n"...)
}

// appendJSONString appends s quoted as encoding/json does with HTML
// escaping: \" \\ \b \f \n \r \t, other control bytes and < > & as \u00XX,
// invalid UTF-8 as \ufffd, U+2028 and U+2029 as \u2028 and \u2029.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
