package usher

import (
	"testing"
	"time"
)

func TestRoomAtEventBoundaries(t *testing.T) {
	start := time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC)
	limit, method := 50, Random
	r := Room{Settings: Settings{TotalActiveUsers: 200, NewUsersPerMinute: 300, QueueingMethod: FIFO}, Events: []Event{{
		Name: "drop", PrequeueStart: start.Add(-20 * time.Second), Start: start, End: start.Add(time.Minute),
		Overrides: Overrides{TotalActiveUsers: &limit, QueueingMethod: &method},
	}}}
	for _, tc := range []struct {
		at     time.Time
		phase  Phase
		total  int
		method QueueingMethod
	}{
		{start.Add(-20*time.Second - time.Nanosecond), NoEvent, 200, FIFO},
		{start.Add(-20 * time.Second), Prequeue, 50, Random},
		{start.Add(-time.Nanosecond), Prequeue, 50, Random},
		{start, Running, 50, Random},
		{start.Add(time.Minute - time.Nanosecond), Running, 50, Random},
		{start.Add(time.Minute), NoEvent, 200, FIFO},
	} {
		s := r.At(tc.at)
		if s.Phase != tc.phase || s.TotalActiveUsers != tc.total || s.QueueingMethod != tc.method {
			t.Errorf("at %v: phase %v total %d method %s; want %v %d %s",
				tc.at.Sub(start), s.Phase, s.TotalActiveUsers, s.QueueingMethod, tc.phase, tc.total, tc.method)
		}
		if s.NewUsersPerMinute != 300 {
			t.Errorf("at %v: an unset override changed new_users_per_minute to %d", tc.at.Sub(start), s.NewUsersPerMinute)
		}
	}
}

func TestCookieDomain(t *testing.T) {
	for _, tc := range []struct {
		hosts []string
		want  string
	}{
		{[]string{"www.shop.test", "checkout.shop.test"}, "shop.test"},
		{[]string{"a.b.shop.test", "c.b.shop.test", "shop.test"}, "shop.test"},
		{[]string{"WWW.Shop.Test", "www.shop.test"}, ""},
		{[]string{"www.shop.test"}, ""},
		{[]string{"www.shop.test", ""}, ""},
		{[]string{"shop.test", "other.test"}, ""},
		{[]string{"a.test", "b.test"}, ""},
	} {
		r := Room{}
		for _, h := range tc.hosts {
			r.Routes = append(r.Routes, Route{Host: h, Path: "/"})
		}
		if got := r.CookieDomain(); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.hosts, got, tc.want)
		}
	}
}
