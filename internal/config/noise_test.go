package config

import "testing"

func TestNoise(t *testing.T) {
	t.Parallel()
	failed := map[string]bool{"rooms[0].events[1].event_start_time": true, "rooms[0].client_limit": true, "rooms[0].name": true}
	cases := []struct {
		path, msg string
		want      bool
	}{
		{"rooms[0].events[1].event_start_time", "required", true},
		{"rooms[0].events[1].event_end_time", "must be after event_start_time (x), got y", true},
		{"rooms[0].events[1]", "overlaps event_start_time", true},
		{"rooms[0].events[0].event_end_time", "must be after event_start_time (x), got y", false},
		{"rooms[0].client_limit.ipv4_prefix", "must be from 1 to 32", true},
		{"rooms[0].total_active_users", "must be at least 1, got 0", false},
		{"rooms[0].cookie_suffix", "give the rooms distinct hostnames", false},
		{"rooms[0].id", "the name_of x", false},
		{"rooms[1].name", "required", false},
	}
	for _, tc := range cases {
		if got := noise(Problem{Path: tc.path, Message: tc.msg}, failed); got != tc.want {
			t.Errorf("noise(%s: %s) = %v, want %v", tc.path, tc.msg, got, tc.want)
		}
	}
}
