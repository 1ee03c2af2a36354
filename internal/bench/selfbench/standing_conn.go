package selfbench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"time"
)

// waiterConn is one keep-alive HTTP/1.1 connection of the standing-room
// generator, one request at a time, as a browser tab keeps one: it writes
// a GET with the waiter's cookie and reads the whole answer (status,
// headers, body by Content-Length or chunks). It is the generator's own
// client because net/http's costs more CPU a request than usher's answer
// (its per-connection goroutines, header maps and cookie parsing), and
// the generator shares the two cores with usher.
type waiterConn struct {
	addr  string
	dials *atomic.Int64 // counts the connections opened, if not nil
	c     net.Conn
	r     *bufio.Reader
	out   []byte // the request being written
	set   []byte // the ticket's Set-Cookie value of the last answer
	body  []byte // the last answer's body
	// held is how long usher held the last answer before deciding it, as
	// its Server-Timing says (usher-hold): a near-front check-in waits for
	// a place that frees on the next second by design.
	held time.Duration
}

// answerLimit bounds an answer's body and headers: anything bigger is not
// a check-in's answer.
const answerLimit = 1 << 20

func (w *waiterConn) lastHeld() time.Duration { return w.held }

func (w *waiterConn) close() {
	if w.c != nil {
		_ = w.c.Close()
		w.c = nil
	}
}

// get sends req (the request line and headers, without the blank line),
// then "Cookie: name=cookie" when cookie is not empty, and reads the
// answer: its status, the value the ticket cookie name is set to (nil if
// not set) and the body. Both slices are valid until the next get. On an
// error the connection is closed; the next get dials again.
func (w *waiterConn) get(req []byte, name string, cookie []byte) (int, []byte, []byte, error) {
	if err := w.dial(); err != nil {
		return 0, nil, nil, err
	}
	status, set, body, keep, err := w.roundTrip(req, name, cookie)
	if err != nil || !keep {
		w.close()
	}
	return status, set, body, err
}

// dial opens the connection unless it is open.
func (w *waiterConn) dial() error {
	if w.c == nil {
		c, err := net.DialTimeout("tcp", w.addr, 10*time.Second)
		if err != nil {
			return err
		}
		w.c = c
		if w.dials != nil {
			w.dials.Add(1)
		}
		if w.r == nil {
			w.r = bufio.NewReaderSize(c, 8<<10)
		} else {
			w.r.Reset(c)
		}
	}
	return nil
}

func (w *waiterConn) roundTrip(req []byte, name string, cookie []byte) (status int, set, body []byte, keep bool, err error) {
	w.out = append(w.out[:0], req...)
	if len(cookie) > 0 {
		w.out = append(w.out, "Cookie: "...)
		w.out = append(w.out, name...)
		w.out = append(w.out, '=')
		w.out = append(w.out, cookie...)
		w.out = append(w.out, "\r\n"...)
	}
	w.out = append(w.out, "\r\n"...)
	_ = w.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := w.c.Write(w.out); err != nil {
		return 0, nil, nil, false, err
	}
	line, err := w.line()
	if err != nil {
		return 0, nil, nil, false, err
	}
	// HTTP/1.1 200 OK
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return 0, nil, nil, false, fmt.Errorf("bad status line %q", line)
	}
	if status, err = strconv.Atoi(string(line[9:12])); err != nil {
		return 0, nil, nil, false, fmt.Errorf("bad status line %q", line)
	}
	keep = line[7] == '1'
	length, chunked := -1, false
	w.set = w.set[:0]
	w.held = 0
	hasSet := false
	for size := 0; ; {
		line, err := w.line()
		if err != nil {
			return 0, nil, nil, false, err
		}
		if size += len(line); size > answerLimit {
			return 0, nil, nil, false, errors.New("answer headers too long")
		}
		if len(line) == 0 {
			break
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return 0, nil, nil, false, fmt.Errorf("bad header line %q", line)
		}
		v = bytes.TrimSpace(v)
		switch {
		case bytes.EqualFold(k, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(v)); err != nil || length < 0 || length > answerLimit {
				return 0, nil, nil, false, fmt.Errorf("bad Content-Length %q", v)
			}
		case bytes.EqualFold(k, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(v, []byte("chunked"))
			if !chunked {
				return 0, nil, nil, false, fmt.Errorf("transfer encoding %q", v)
			}
		case bytes.EqualFold(k, []byte("Connection")):
			if bytes.EqualFold(v, []byte("close")) {
				keep = false
			}
		case bytes.EqualFold(k, []byte("Server-Timing")):
			w.held += serverHold(v)
		case bytes.EqualFold(k, []byte("Set-Cookie")):
			// name=value; attributes
			if rest, ok := bytes.CutPrefix(v, []byte(name+"=")); ok {
				val, _, _ := bytes.Cut(rest, []byte(";"))
				w.set, hasSet = append(w.set, val...), true
			}
		}
	}
	w.body = w.body[:0]
	switch {
	case chunked:
		err = w.chunks()
	case length >= 0:
		w.body = grow(w.body, length)
		_, err = io.ReadFull(w.r, w.body)
	default:
		// No length: the body runs to the connection's end.
		keep = false
		var b []byte
		b, err = io.ReadAll(io.LimitReader(w.r, answerLimit))
		w.body = append(w.body, b...)
	}
	if err != nil {
		return 0, nil, nil, false, err
	}
	if hasSet {
		set = w.set
	}
	return status, set, w.body, keep, nil
}

// line reads one line of the answer's head, without its CRLF.
func (w *waiterConn) line() ([]byte, error) {
	line, err := w.r.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			err = errors.New("answer line too long")
		}
		return nil, err
	}
	return bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r")), nil
}

// chunks reads a chunked body into w.body.
func (w *waiterConn) chunks() error {
	for {
		line, err := w.line()
		if err != nil {
			return err
		}
		hex, _, _ := bytes.Cut(line, []byte(";"))
		n, err := strconv.ParseInt(string(bytes.TrimSpace(hex)), 16, 32)
		if err != nil || n < 0 || len(w.body)+int(n) > answerLimit {
			return fmt.Errorf("bad chunk size %q", line)
		}
		if n == 0 {
			// Trailers, up to the blank line.
			for {
				line, err := w.line()
				if err != nil {
					return err
				}
				if len(line) == 0 {
					return nil
				}
			}
		}
		at := len(w.body)
		w.body = grow(w.body, at+int(n))
		if _, err := io.ReadFull(w.r, w.body[at:]); err != nil {
			return err
		}
		if line, err := w.line(); err != nil || len(line) != 0 {
			return fmt.Errorf("chunk not followed by CRLF: %q %v", line, err)
		}
	}
}

// grow returns b resized to n bytes, keeping its contents.
func grow(b []byte, n int) []byte {
	if cap(b) < n {
		nb := make([]byte, n, max(n, 2*cap(b)))
		copy(nb, b)
		return nb
	}
	return b[:n]
}

// serverHold reads usher's hold from a Server-Timing header value
// ("usher-hold;dur=412.0", among other metrics or alone): zero when it has
// none or it does not parse.
func serverHold(v []byte) time.Duration {
	for _, metric := range bytes.Split(v, []byte(",")) {
		name, params, _ := bytes.Cut(bytes.TrimSpace(metric), []byte(";"))
		if !bytes.Equal(bytes.TrimSpace(name), []byte("usher-hold")) {
			continue
		}
		for _, p := range bytes.Split(params, []byte(";")) {
			if dur, ok := bytes.CutPrefix(bytes.TrimSpace(p), []byte("dur=")); ok {
				if ms, err := strconv.ParseFloat(string(dur), 64); err == nil && ms > 0 && ms < 60_000 {
					return time.Duration(ms * float64(time.Millisecond))
				}
			}
		}
	}
	return 0
}
