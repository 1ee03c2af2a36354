package local

import (
	"context"
	"encoding/binary"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/usherhq/usher"
	bolt "go.etcd.io/bbolt"
)

// Analytics live in the bucket "analytics", one nested bucket per room,
// one key per point: the step ('m' minute, 'h' hour) then the point's
// start in unix seconds (8 bytes, big-endian, so that keys sort by time),
// and as value the point's fields (see encodePoint). Without a file they
// live in memory, in the same shape.
var bucketAnalytics = []byte("analytics")

// point is one stored analytics point.
type point struct {
	add, max map[string]int64
}

func pointKey(step byte, start time.Time) []byte {
	k := make([]byte, 9)
	k[0] = step
	binary.BigEndian.PutUint64(k[1:], uint64(start.Unix()))
	return k
}

// encodePoint writes p as: uvarint count of add fields, each as uvarint
// name length, name, uvarint value; then the max fields alike.
func encodePoint(p point) []byte {
	var b []byte
	for _, m := range []map[string]int64{p.add, p.max} {
		b = binary.AppendUvarint(b, uint64(len(m)))
		for k, v := range m {
			b = binary.AppendUvarint(b, uint64(len(k)))
			b = append(b, k...)
			b = binary.AppendUvarint(b, uint64(v))
		}
	}
	return b
}

var errPoint = errors.New("malformed analytics point")

func decodePoint(b []byte) (point, error) {
	p := point{add: map[string]int64{}, max: map[string]int64{}}
	for _, m := range []map[string]int64{p.add, p.max} {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > usher.AnalyticsMaxFields {
			return point{}, errPoint
		}
		b = b[k:]
		for range n {
			l, k := binary.Uvarint(b)
			if k <= 0 || l > 64 || uint64(len(b)-k) < l {
				return point{}, errPoint
			}
			name := string(b[k : k+int(l)])
			b = b[k+int(l):]
			v, k2 := binary.Uvarint(b)
			if k2 <= 0 {
				return point{}, errPoint
			}
			b = b[k2:]
			m[name] = int64(v)
		}
	}
	return p, nil
}

// merge adds d's fields to p, and reports whether p then holds no more
// than usher.AnalyticsMaxFields fields.
func (p *point) merge(d *usher.AnalyticsDelta) bool {
	if p.add == nil {
		p.add = map[string]int64{}
	}
	if p.max == nil {
		p.max = map[string]int64{}
	}
	for k, v := range d.Add {
		p.add[k] += v
	}
	for k, v := range d.Max {
		if old, ok := p.max[k]; !ok || v > old {
			p.max[k] = v
		}
	}
	return len(p.add)+len(p.max) <= usher.AnalyticsMaxFields
}

// memAnalytics holds a room's points when there is no file.
type memAnalytics map[string]point // string(pointKey) -> point

// AddAnalytics implements usher.Store: one bbolt transaction (synced)
// merges every delta into its minute and hour points and drops the room's
// points past their retention.
func (s *Store) AddAnalytics(ctx context.Context, room string, deltas []usher.AnalyticsDelta) error {
	for i := range deltas {
		if err := deltas[i].Check(); err != nil {
			return err
		}
	}
	now := s.opts.Now()
	tooMany := usher.Errorf(usher.EInvalid, "analytics: a point of room %q would hold more than %d fields", room, usher.AnalyticsMaxFields)
	if s.db == nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.analytics == nil {
			s.analytics = map[string]memAnalytics{}
		}
		cur := s.analytics[room]
		next := make(memAnalytics, len(cur)+2)
		for k, p := range cur {
			next[k] = p
		}
		for i := range deltas {
			d := &deltas[i]
			for _, k := range []string{string(pointKey('m', d.Minute)), string(pointKey('h', d.Minute.Truncate(time.Hour)))} {
				p := point{add: maps.Clone(next[k].add), max: maps.Clone(next[k].max)}
				if !p.merge(d) {
					return tooMany
				}
				next[k] = p
			}
		}
		pruneMem(next, now)
		s.analytics[room] = next
		if now.Sub(s.analyticsSwept) >= time.Hour {
			s.analyticsSwept = now
			for id, m := range s.analytics {
				if pruneMem(m, now); len(m) == 0 {
					delete(s.analytics, id)
				}
			}
		}
		return nil
	}
	s.analyticsMu.Lock()
	defer s.analyticsMu.Unlock()
	return s.db.Update(func(tx *bolt.Tx) error {
		ab, err := tx.CreateBucketIfNotExists(bucketAnalytics)
		if err != nil {
			return err
		}
		rb, err := ab.CreateBucketIfNotExists([]byte(room))
		if err != nil {
			return err
		}
		for i := range deltas {
			d := &deltas[i]
			for _, k := range [][]byte{pointKey('m', d.Minute), pointKey('h', d.Minute.Truncate(time.Hour))} {
				var p point
				if v := rb.Get(k); v != nil {
					if p, err = decodePoint(v); err != nil {
						return err
					}
				}
				if !p.merge(d) {
					return tooMany
				}
				if err := rb.Put(k, encodePoint(p)); err != nil {
					return err
				}
			}
		}
		if err := prune(rb, now); err != nil {
			return err
		}
		// Once an hour, every room's: a room no longer in the config has no
		// flushes of its own.
		if now.Sub(s.analyticsSwept) < time.Hour {
			return nil
		}
		s.analyticsSwept = now
		return ab.ForEachBucket(func(name []byte) error {
			if b := ab.Bucket(name); b != nil {
				return prune(b, now)
			}
			return nil
		})
	})
}

// prune drops a room's points past their retention: the oldest keys of
// each step come first. The keys are gathered before they are deleted
// (deleting under a cursor moves it).
func prune(rb *bolt.Bucket, now time.Time) error {
	var old [][]byte
	for _, step := range []byte{'m', 'h'} {
		c := rb.Cursor()
		for k, _ := c.Seek([]byte{step}); k != nil && k[0] == step && len(k) == 9 &&
			expired(step, int64(binary.BigEndian.Uint64(k[1:])), now); k, _ = c.Next() {
			old = append(old, append([]byte(nil), k...))
		}
	}
	for _, k := range old {
		if err := rb.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// pruneMem drops the points of m past their retention.
func pruneMem(m memAnalytics, now time.Time) {
	for k := range m {
		if expired(k[0], int64(binary.BigEndian.Uint64([]byte(k[1:]))), now) {
			delete(m, k)
		}
	}
}

// expired reports whether a point of step starting at the unix second
// start is past its retention at now.
func expired(step byte, start int64, now time.Time) bool {
	keep, width := usher.AnalyticsMinuteKeep, time.Minute
	if step == 'h' {
		keep, width = usher.AnalyticsHourKeep, time.Hour
	}
	return time.Unix(start, 0).Add(width + keep).Before(now)
}

// ReadAnalytics implements usher.Store.
func (s *Store) ReadAnalytics(ctx context.Context, room string, step time.Duration, from, to time.Time) ([]usher.AnalyticsPoint, error) {
	var sb byte
	switch step {
	case time.Minute:
		sb = 'm'
	case time.Hour:
		sb = 'h'
	default:
		return nil, usher.Errorf(usher.EInvalid, "analytics: step %v is neither a minute nor an hour", step)
	}
	lo, hi := pointKey(sb, from.Add(step-1).Truncate(step)), pointKey(sb, to)
	if s.db == nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		var out []usher.AnalyticsPoint
		for k, p := range s.analytics[room] {
			if k >= string(lo) && k < string(hi) {
				out = append(out, usher.AnalyticsPoint{Start: keyTime(k), Add: maps.Clone(p.add), Max: maps.Clone(p.max)})
			}
		}
		sortPoints(out)
		return out, nil
	}
	var out []usher.AnalyticsPoint
	err := s.db.View(func(tx *bolt.Tx) error {
		ab := tx.Bucket(bucketAnalytics)
		if ab == nil {
			return nil
		}
		rb := ab.Bucket([]byte(room))
		if rb == nil {
			return nil
		}
		c := rb.Cursor()
		for k, v := c.Seek(lo); k != nil && string(k) < string(hi); k, v = c.Next() {
			p, err := decodePoint(v)
			if err != nil {
				return err
			}
			out = append(out, usher.AnalyticsPoint{Start: keyTime(string(k)), Add: p.add, Max: p.max})
		}
		return nil
	})
	return out, err
}

func keyTime(k string) time.Time {
	return time.Unix(int64(binary.BigEndian.Uint64([]byte(k[1:]))), 0).UTC()
}

func sortPoints(ps []usher.AnalyticsPoint) {
	slices.SortFunc(ps, func(a, b usher.AnalyticsPoint) int { return a.Start.Compare(b.Start) })
}
