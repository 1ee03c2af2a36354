package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// progressLine shows a long run's progress on stderr: on a terminal, one
// line rewritten in place ("\r"); elsewhere (a file, a CI log), a line
// every progressEvery. It stays silent for the first progressQuiet, so a
// short run prints nothing, and a terminal's line is cleared at the end.
// It is safe for concurrent use.
type progressLine struct {
	w      io.Writer
	prefix string
	tty    bool
	now    func() time.Time

	mu    sync.Mutex
	start time.Time
	last  time.Time // when a line was last written (not on a terminal)
	width int       // of the line on the terminal (0: none shown)
}

// How often and how soon progressLine writes.
const (
	progressQuiet = 3 * time.Second
	progressEvery = 5 * time.Second
)

// progress returns a progress line on m.Stderr, each line starting with
// prefix ("usher bench: ").
func (m *Main) progress(prefix string) *progressLine {
	return &progressLine{w: m.Stderr, prefix: prefix, tty: isTerminal(m.Stderr), now: time.Now, start: time.Now()}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Update shows s as the progress now.
func (p *progressLine) Update(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if now.Sub(p.start) < progressQuiet {
		return
	}
	line := p.prefix + s
	if p.tty {
		pad := max(p.width-len([]rune(line)), 0)
		fmt.Fprintf(p.w, "\r%s%s", line, strings.Repeat(" ", pad))
		p.width = len([]rune(line))
		return
	}
	if !p.last.IsZero() && now.Sub(p.last) < progressEvery {
		return
	}
	p.last = now
	fmt.Fprintln(p.w, line)
}

// Done clears the terminal's line; elsewhere it does nothing.
func (p *progressLine) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.width > 0 {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.width))
		p.width = 0
	}
}
