package config

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

func TestParseEvents(t *testing.T) {
	c := MustParse(t, `origin: http://o
rooms:
  - id: sale
    total_active_users: 200
    new_users_per_minute: 300
    events:
      - name: late
        event_start_time: 2026-12-02T10:00:00+01:00
        event_end_time: 2026-12-02T11:00:00+01:00
        total_active_users: 50
        session_duration: 15m
        queueing_method: random
        queue_all: false
        default_template_language: null
      - name: early
        prequeue_start_time: 2026-12-01T09:40:00Z
        event_start_time: "2026-12-01T10:00:00Z"
        event_end_time: 2026-12-01T11:00:00.5Z
        shuffle_at_event_start: true
`)
	events := c.Rooms[0].Events
	if len(events) != 2 || events[0].Name != "early" || events[1].Name != "late" {
		t.Fatalf("events = %+v, want early then late (sorted by start)", events)
	}
	early := events[0]
	if want := time.Date(2026, 12, 1, 9, 40, 0, 0, time.UTC); !early.PrequeueStart.Equal(want) {
		t.Errorf("early.PrequeueStart = %v, want %v", early.PrequeueStart, want)
	}
	if want := time.Date(2026, 12, 1, 11, 0, 0, 5e8, time.UTC); !early.End.Equal(want) || !early.ShuffleAtStart {
		t.Errorf("early = %+v", early)
	}
	if early.Overrides != (usher.Overrides{}) {
		t.Errorf("early.Overrides = %+v, want none", early.Overrides)
	}
	late := events[1]
	if want := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC); !late.Start.Equal(want) {
		t.Errorf("late.Start = %v, want %v", late.Start, want)
	}
	o := late.Overrides
	if o.TotalActiveUsers == nil || *o.TotalActiveUsers != 50 ||
		o.SessionDuration == nil || *o.SessionDuration != 15*time.Minute ||
		o.QueueingMethod == nil || *o.QueueingMethod != usher.Random ||
		o.QueueAll == nil || *o.QueueAll {
		t.Errorf("late.Overrides = %+v", o)
	}
	if o.NewUsersPerMinute != nil || o.DefaultTemplateLanguage != nil || o.RefreshInterval != nil || o.CustomPageHTML != nil {
		t.Errorf("late.Overrides sets fields the file leaves out or null: %+v", o)
	}
	s := c.Rooms[0].At(late.Start)
	if s.Phase != usher.Running || s.TotalActiveUsers != 50 || s.NewUsersPerMinute != 300 {
		t.Errorf("At(late.Start) = %+v, want the event's 50 and the room's 300", s)
	}
}

func TestParseRulesDefaults(t *testing.T) {
	c := MustParse(t, `origin: http://o
country_header: CF-IPCountry
watch_config: true
rooms:
  - id: sale
    total_active_users: 1
    new_users_per_minute: 1
    rules:
      - expression: path == "/health"
      - description: off
        expression: "true"
        action: ""
        enabled: false
`)
	want := []usher.Rule{
		{Expression: `path == "/health"`, Action: "bypass_waiting_room", Enabled: true},
		{Description: "off", Expression: "true", Action: "bypass_waiting_room"},
	}
	if got := c.Rooms[0].Rules; !reflect.DeepEqual(got, want) {
		t.Errorf("rules = %+v, want %+v", got, want)
	}
	if c.CountryHeader != "CF-IPCountry" || !c.WatchConfig {
		t.Errorf("country_header, watch_config = %q, %v", c.CountryHeader, c.WatchConfig)
	}
}

func TestParseTime(t *testing.T) {
	tests := []struct {
		in, want string // want: a substring of the message, "" for valid
	}{
		{"2026-12-01T10:00:00Z", ""},
		{"2026-12-01T10:00:00.123Z", ""},
		{"2026-12-01T11:00:00+01:00", ""},
		{"2026-12-01T10:00:00-05:30", ""},
		{"2026-12-01T10:00:00", "has no time zone"},
		{"2026-12-01 10:00:00", "has no time zone"},
		{"2026-12-01T10:00", "has no time zone"},
		{"2026-12-01", "must be a date and a time"},
		{"tomorrow", "RFC 3339"},
		{"2026-13-01T10:00:00Z", "RFC 3339"},
		{"", "RFC 3339"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, got := parseTime(tt.in)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("parseTime(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// validRoom returns a room that Validate accepts, to add events to.
func validRoom() usher.Room {
	r := defaultRoom()
	r.ID, r.Origin = "sale", "http://o"
	r.TotalActiveUsers, r.NewUsersPerMinute = 10, 10
	return r
}

func TestValidateEvents(t *testing.T) {
	at := func(h, m int) time.Time { return time.Date(2026, 12, 1, h, m, 0, 0, time.UTC) }
	zero, five := 0, 5
	fr, xx, empty := "fr", "xx", ""
	tests := []struct {
		name   string
		events []usher.Event
		want   []string // problems, as Problem.String
	}{
		{"valid", []usher.Event{
			{Name: "a", PrequeueStart: at(9, 0), Start: at(10, 0), End: at(11, 0), ShuffleAtStart: true, Overrides: usher.Overrides{TotalActiveUsers: &five, DefaultTemplateLanguage: &fr}},
			{Name: "b", Start: at(11, 0), End: at(12, 0)},
		}, nil},
		{"required", []usher.Event{{}}, []string{
			"rooms[0] (sale): events[0].name: required",
			`rooms[0] (sale): events[0].event_start_time: required, an RFC 3339 time like "2026-12-01T10:00:00Z"`,
			`rooms[0] (sale): events[0].event_end_time: required, an RFC 3339 time like "2026-12-01T10:00:00Z"`,
		}},
		{"empty window", []usher.Event{{Name: "a", Start: at(10, 0), End: at(10, 0)}}, []string{
			"rooms[0] (sale): events[0] (a): event_end_time: must be after event_start_time (2026-12-01T10:00:00Z), got 2026-12-01T10:00:00Z",
		}},
		{"prequeue at start", []usher.Event{{Name: "a", PrequeueStart: at(10, 0), Start: at(10, 0), End: at(11, 0)}}, []string{
			"rooms[0] (sale): events[0] (a): prequeue_start_time: must be before event_start_time (2026-12-01T10:00:00Z), got 2026-12-01T10:00:00Z",
		}},
		{"overrides", []usher.Event{{Name: "a", Start: at(10, 0), End: at(11, 0), Overrides: usher.Overrides{
			TotalActiveUsers: &zero, DefaultTemplateLanguage: &xx, CustomPageHTML: &empty,
		}}}, []string{
			"rooms[0] (sale): events[0] (a): total_active_users: must be at least 1, got 0",
			`rooms[0] (sale): events[0] (a): default_template_language: usher has no pages in "xx"; supported: en-US, de-DE, es-ES, fr-FR, it-IT, ja-JP, nl-NL, pt-BR, zh-CN`,
			`rooms[0] (sale): events[0] (a): custom_page_html: must name a template file, got "" (leave custom_page_html out for the default page)`,
		}},
		{"pre-queue overlaps the event before", []usher.Event{
			{Name: "b", PrequeueStart: at(10, 30), Start: at(11, 0), End: at(12, 0)},
			{Name: "a", Start: at(10, 0), End: at(11, 0)},
		}, []string{
			"rooms[0] (sale): events[1] (a): its window, 2026-12-01T10:00:00Z to 2026-12-01T11:00:00Z, overlaps the window of events[0] (b), 2026-12-01T10:30:00Z to 2026-12-01T12:00:00Z: a room's events must not overlap (a pre-queue is part of its event's window)",
		}},
		{"one inside another", []usher.Event{
			{Name: "a", Start: at(9, 0), End: at(12, 0)},
			{Name: "b", Start: at(10, 0), End: at(11, 0)},
		}, []string{
			"rooms[0] (sale): events[1] (b): its window, 2026-12-01T10:00:00Z to 2026-12-01T11:00:00Z, overlaps the window of events[0] (a), 2026-12-01T09:00:00Z to 2026-12-01T12:00:00Z: a room's events must not overlap (a pre-queue is part of its event's window)",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			c.Rooms = []usher.Room{validRoom()}
			c.Rooms[0].Events = tt.events
			var got []string
			var v *ValidationError
			if err := c.Validate(); errors.As(err, &v) {
				for _, p := range v.Problems {
					got = append(got, p.String())
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestLoadStoresAbsolutePagePaths(t *testing.T) {
	c, err := Load(filepath.Join("testdata", "valid_events.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := filepath.Abs(filepath.Join("testdata", "pages", "tickets.html"))
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, e := range c.Rooms[0].Events {
		if p := e.Overrides.CustomPageHTML; p != nil {
			found = true
			if *p != want {
				t.Errorf("event %q page = %q, want %q", e.Name, *p, want)
			}
		}
	}
	if !found {
		t.Error("no event has a custom page")
	}
	// Parse does no I/O: it keeps the path as written.
	c2 := MustParse(t, "origin: http://o\nrooms:\n  - id: a\n    total_active_users: 1\n    new_users_per_minute: 1\n    custom_page_html: nowhere.html\n")
	if got := c2.Rooms[0].CustomPageHTML; got != "nowhere.html" {
		t.Errorf("Parse kept custom_page_html %q, want it as written", got)
	}
}

func TestEventClock(t *testing.T) {
	var k eventClock
	got := []string{
		k.at(time.Date(2026, 12, 1, 10, 40, 0, 0, time.FixedZone("", 3600))),
		k.at(time.Date(2026, 12, 1, 10, 0, 30, 0, time.UTC)),
		k.at(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)),
	}
	want := []string{"2026-12-01 09:40 UTC", "10:00:30", "2026-12-02 00:00"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("eventClock = %q, want %q", got, want)
	}
}
