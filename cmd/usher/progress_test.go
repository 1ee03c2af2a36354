package main

import (
	"bytes"
	"testing"
	"time"
)

func TestProgressLine(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := start
	newLine := func(tty bool) (*progressLine, *bytes.Buffer) {
		var buf bytes.Buffer
		return &progressLine{w: &buf, prefix: "usher bench: ", tty: tty, now: func() time.Time { return clock }, start: start}, &buf
	}
	at := func(d time.Duration) { clock = start.Add(d) }

	t.Run("log", func(t *testing.T) {
		p, buf := newLine(false)
		for _, s := range []struct {
			at   time.Duration
			line string
		}{{time.Second, "a"}, {2900 * time.Millisecond, "b"}, {3 * time.Second, "c"}, {5 * time.Second, "d"}, {8 * time.Second, "e"}, {9 * time.Second, "f"}} {
			at(s.at)
			p.Update(s.line)
		}
		p.Done()
		// Quiet for 3 s, then a line every 5 s.
		if got, want := buf.String(), "usher bench: c\nusher bench: e\n"; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	})
	t.Run("terminal", func(t *testing.T) {
		p, buf := newLine(true)
		at(time.Second)
		p.Update("quiet")
		at(4 * time.Second)
		p.Update("longer line")
		p.Update("short")
		p.Done()
		want := "\rusher bench: longer line" + "\rusher bench: short      " + "\r                  \r"
		if got := buf.String(); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	})
	t.Run("short run on a terminal", func(t *testing.T) {
		p, buf := newLine(true)
		at(time.Second)
		p.Update("x")
		p.Done()
		if buf.Len() != 0 {
			t.Errorf("wrote %q", buf.String())
		}
	})
}
