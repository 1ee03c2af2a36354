package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// invite runs "usher invite new": it asks a running usher's admin API for an
// invite link and prints it.
func (m *Main) invite(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "new" {
		fmt.Fprint(m.Stderr, "Usage: usher invite new --room ROOM --uses N --expires T (--admit | --front) [--url BASE]\n")
		return errUsage
	}
	fs := m.flags("invite new", "invite new --room ROOM --uses N --expires T (--admit | --front) [--url BASE] [--admin ADDR] [--token TOKEN]")
	room := fs.String("room", "", "the room the invite is for (required)")
	uses := fs.Int("uses", 1, "how many times the link may be used")
	expires := fs.String("expires", "", `when the link stops working: a duration from now ("24h") or an RFC 3339 time (required)`)
	admit := fs.Bool("admit", false, "the link lets its visitor in at once, counted, even past the limits")
	front := fs.Bool("front", false, "the link gives its visitor a place at the front of the line")
	base := fs.String("url", "", "the site's public URL (https://shop.example), to print the whole link")
	admin := fs.String("admin", os.Getenv("USHER_ADMIN"), "the admin listener, host:port or URL (env USHER_ADMIN)")
	token := fs.String("token", os.Getenv("USHER_TOKEN"), "the admin token (env USHER_TOKEN)")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	var problems []string
	if *room == "" {
		problems = append(problems, "--room is required")
	}
	if *expires == "" {
		problems = append(problems, "--expires is required (a duration like 24h, or an RFC 3339 time)")
	}
	if *admit == *front {
		problems = append(problems, "give exactly one of --admit and --front")
	}
	if *admin == "" {
		problems = append(problems, "--admin (or USHER_ADMIN) is required: the running usher's admin listener")
	}
	if *token == "" {
		problems = append(problems, "--token (or USHER_TOKEN) is required")
	}
	if *uses < 1 {
		problems = append(problems, fmt.Sprintf("--uses must be at least 1, got %d", *uses))
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(m.Stderr, "usher invite new: "+p)
		}
		return errUsage
	}
	mode := "front"
	if *admit {
		mode = "admit"
	}
	body, _ := json.Marshal(map[string]any{"uses": *uses, "expires": *expires, "mode": mode})
	url := strings.TrimSuffix(adminURL(*admin), "/") + "/v1/rooms/" + *room + "/invites"
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("--admin: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+*token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("admin API at %s: %w", *admin, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusCreated {
		var e struct {
			Error struct{ Message string } `json:"error"`
		}
		if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
			return fmt.Errorf("admin API: %s (%d)", e.Error.Message, resp.StatusCode)
		}
		return fmt.Errorf("admin API: %s", resp.Status)
	}
	var out struct {
		Path    string    `json:"path"`
		Expires time.Time `json:"expires"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.Path == "" {
		return errors.New("admin API: an answer without a link")
	}
	link := out.Path
	if *base != "" {
		link = strings.TrimSuffix(*base, "/") + out.Path
	}
	fmt.Fprintln(m.Stdout, link)
	if *base == "" {
		fmt.Fprintln(m.Stderr, "(a path: put the site's address in front of it, or pass --url https://your.site)")
	}
	fmt.Fprintf(m.Stderr, "%s, %d use(s), until %s\n", mode, *uses, out.Expires.Format(time.RFC3339))
	return nil
}

// adminURL turns host:port into http://host:port; a URL stays as it is.
func adminURL(a string) string {
	if strings.HasPrefix(a, "http://") || strings.HasPrefix(a, "https://") {
		return a
	}
	return "http://" + a
}
