package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/usherhq/usher/internal/draw"
)

// maxDrawsBody bounds what verify-draw reads: a published order of a
// million entries is about 70 MB.
const maxDrawsBody = 256 << 20

// verifyDraw recomputes a room's published draws (a URL of
// /__usher/draws/<room>, or a saved copy) from their own data alone and
// says whether each matches (docs/fairness.md). It fails when one does
// not, or when a commitment the user saw before the draw is not there.
func (m *Main) verifyDraw(ctx context.Context, args []string) error {
	fs := m.flags("verify-draw", "verify-draw [--room ROOM] [--commitment HEX] [--entry HEX] URL|FILE")
	room := fs.String("room", "", "the room the draws must be of (default: the one the data names)")
	commitment := fs.String("commitment", "", "a commitment seen before the draw: fail unless a draw has it")
	entry := fs.String("entry", "", "your entry (from your waiting page): say where it is in each draw")
	timeout := fs.Duration("timeout", 30*time.Second, "how long to wait for a URL's answer")
	var source []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			return errUsage
		}
		if fs.NArg() == 0 {
			break
		}
		source = append(source, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(source) != 1 {
		fmt.Fprintf(m.Stderr, "usher verify-draw: want one URL or file of published draws, got %d\n", len(source))
		return errUsage
	}
	*entry = strings.ToLower(strings.TrimSpace(*entry))
	body, err := readDraws(ctx, source[0], *timeout)
	if err != nil {
		return fmt.Errorf("verify-draw: %w", err)
	}
	var pub draw.Room
	if err := json.Unmarshal(body, &pub); err != nil {
		return fmt.Errorf("verify-draw: %s: not published draws: %w", source[0], err)
	}
	if *room != "" && pub.Room != *room {
		return fmt.Errorf("verify-draw: %s: the draws of room %q, not of --room %q", source[0], pub.Room, *room)
	}
	bad, seen := 0, false
	for _, d := range pub.Draws {
		seen = seen || (*commitment != "" && strings.EqualFold(d.Commitment, *commitment))
		probs := draw.Verify(pub.Room, d)
		switch {
		case !d.Revealed:
			fmt.Fprintf(m.Stdout, "%s: committed (%s), not revealed yet\n", d.ID, d.Commitment)
		case len(probs) == 0:
			fmt.Fprintf(m.Stdout, "%s: verified: %s\n", d.ID, drawSummary(d))
		default:
			bad++
			fmt.Fprintf(m.Stdout, "%s: MISMATCH\n", d.ID)
			for _, p := range probs {
				fmt.Fprintf(m.Stdout, "  %s\n", p)
			}
		}
		if *entry != "" {
			for i, p := range d.Order {
				if p.Entry == *entry {
					fmt.Fprintf(m.Stdout, "  your entry is number %d of %d (place %d)\n", i+1, len(d.Order), p.Place)
				}
			}
			for _, w := range d.Windows {
				for _, a := range w.Admitted {
					if a.Entry == *entry {
						fmt.Fprintf(m.Stdout, "  your entry was admitted in window %d, drawing %v\n", w.Window, a.Draw)
					}
				}
			}
		}
	}
	if *commitment != "" && !seen {
		return fmt.Errorf("verify-draw: no draw of room %q has the commitment %s", pub.Room, *commitment)
	}
	if bad > 0 {
		return fmt.Errorf("verify-draw: %d of %d draws of room %q do not match", bad, len(pub.Draws), pub.Room)
	}
	return nil
}

// drawSummary says what a verified draw holds.
func drawSummary(d draw.Record) string {
	if d.Kind == draw.KindShuffle {
		return fmt.Sprintf("%d entries in the order the seed gives", len(d.Order))
	}
	n := 0
	for _, w := range d.Windows {
		n += len(w.Admitted)
	}
	return fmt.Sprintf("%d windows revealed, %d admissions drawn as recorded", len(d.Windows), n)
}

// readDraws reads published draws from an http(s) URL, a file, or - (the
// standard input).
func readDraws(ctx context.Context, source string, timeout time.Duration) ([]byte, error) {
	if source == "-" {
		return io.ReadAll(io.LimitReader(os.Stdin, maxDrawsBody))
	}
	if !strings.HasPrefix(source, "http://") && !strings.HasPrefix(source, "https://") {
		return os.ReadFile(source)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, source, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxDrawsBody))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s: %s", source, resp.Status, strings.Join(strings.Fields(string(b[:min(len(b), 300)])), " "))
	}
	return b, nil
}
