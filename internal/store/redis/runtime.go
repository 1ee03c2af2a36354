package redis

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/usherhq/usher"
	"github.com/valkey-io/valkey-go"
)

// The runtime document is a hash, {<prefix>}:runtime, with the version in
// field v and the document in field doc; the audit log is a sorted set,
// {<prefix>}:audit, of "<version>:<record>" scored by version. Both keys
// share the hash tag {<prefix>}, so one script updates both, on a cluster
// too.
func (s *Store) runtimeKeys() []string {
	tag := "{" + s.opts.KeyPrefix + "}:"
	return []string{tag + "runtime", tag + "audit"}
}

// swapRuntimeLua replaces the document if its version is still ARGV[1]:
// KEYS the document and the log; ARGV from, the next version, the
// document, the log's record and how many records to keep. The version
// is the next one or, when a record appended alone (AppendAudit) is
// numbered past it, the one after the log's last. Returns {1, version}
// when swapped, {0, version} when the version moved.
var swapRuntimeLua = valkey.NewLuaScript(`
local v = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
if v ~= tonumber(ARGV[1]) then
  return {0, v}
end
local next = tonumber(ARGV[2])
local top = redis.call('ZREVRANGE', KEYS[2], 0, 0, 'WITHSCORES')
if top[2] and tonumber(top[2]) >= next then
  next = tonumber(top[2]) + 1
end
local vs = string.format('%d', next)
redis.call('HSET', KEYS[1], 'v', vs, 'doc', ARGV[3])
redis.call('ZADD', KEYS[2], vs, vs .. ':' .. ARGV[4])
local n = redis.call('ZCARD', KEYS[2])
local keep = tonumber(ARGV[5])
if n > keep then
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, n - keep - 1)
end
return {1, next}
`)

// appendAuditLua appends a record numbered after the log's last record
// and the document's version, leaving the document alone: KEYS the
// document and the log; ARGV the record and how many records to keep.
// Returns the record's number.
var appendAuditLua = valkey.NewLuaScript(`
local next = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
local top = redis.call('ZREVRANGE', KEYS[2], 0, 0, 'WITHSCORES')
if top[2] and tonumber(top[2]) > next then
  next = tonumber(top[2])
end
next = next + 1
local vs = string.format('%d', next)
redis.call('ZADD', KEYS[2], vs, vs .. ':' .. ARGV[1])
local n = redis.call('ZCARD', KEYS[2])
local keep = tonumber(ARGV[2])
if n > keep then
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, n - keep - 1)
end
return next
`)

// LoadRuntime implements usher.Store with one HMGET.
func (s *Store) LoadRuntime(ctx context.Context) (int64, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	res := s.client.Do(ctx, s.client.B().Hmget().Key(s.runtimeKeys()[0]).Field("v", "doc").Build())
	if err := res.Error(); err != nil {
		return 0, nil, fail("load runtime", err)
	}
	arr, err := res.ToArray()
	if err != nil || len(arr) != 2 {
		return 0, nil, malformed("load runtime", "%d values, %v", len(arr), err)
	}
	vs, err := arr[0].ToString()
	if valkey.IsValkeyNil(err) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, malformed("load runtime", "version: %v", err)
	}
	v, err := strconv.ParseInt(vs, 10, 64)
	if err != nil {
		return 0, nil, malformed("load runtime", "version %q", vs)
	}
	doc, err := arr[1].ToString()
	if err != nil && !valkey.IsValkeyNil(err) {
		return 0, nil, malformed("load runtime", "document: %v", err)
	}
	return v, []byte(doc), nil
}

// RuntimeVersion implements usher.Store with one HGET of a small field.
func (s *Store) RuntimeVersion(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	vs, ok, err := str("runtime version", s.client.Do(ctx, s.client.B().Hget().Key(s.runtimeKeys()[0]).Field("v").Build()))
	if err != nil || !ok {
		return 0, err
	}
	v, err := strconv.ParseInt(vs, 10, 64)
	if err != nil {
		return 0, malformed("runtime version", "version %q", vs)
	}
	return v, nil
}

// SwapRuntime implements usher.Store with one script call. The first
// version is the time in unix milliseconds, so that versions keep rising
// when Redis loses its data and the document starts again: a node that
// applied a version before the loss sees a different one after it.
func (s *Store) SwapRuntime(ctx context.Context, from int64, doc, audit []byte) (int64, error) {
	next := from + 1
	if from == 0 {
		next = max(1, time.Now().UnixMilli())
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	res := swapRuntimeLua.Exec(ctx, s.client, s.runtimeKeys(), []string{
		itoa(from), itoa(next), string(doc), string(audit), strconv.Itoa(s.auditKeep()),
	})
	if err := res.Error(); err != nil {
		return 0, fail("swap runtime", err)
	}
	arr, err := res.AsIntSlice()
	if err != nil || len(arr) == 0 {
		return 0, malformed("swap runtime", "%v", err)
	}
	if arr[0] != 1 {
		cur := int64(0)
		if len(arr) > 1 {
			cur = arr[1]
		}
		return 0, usher.Errorf(usher.EConflict, "runtime document: version %d, not %d: changed meanwhile", cur, from)
	}
	if len(arr) > 1 {
		next = arr[1]
	}
	return next, nil
}

// auditKeep returns how many audit records the store keeps.
func (s *Store) auditKeep() int {
	if s.opts.AuditKeep > 0 {
		return s.opts.AuditKeep
	}
	return usher.AuditKeep
}

// AppendAudit implements usher.Store with one script call.
func (s *Store) AppendAudit(ctx context.Context, audit []byte) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	v, err := appendAuditLua.Exec(ctx, s.client, s.runtimeKeys(), []string{string(audit), strconv.Itoa(s.auditKeep())}).AsInt64()
	if err != nil {
		return 0, fail("append audit", err)
	}
	return v, nil
}

// ReadAudit implements usher.Store with one ZREVRANGEBYSCORE.
func (s *Store) ReadAudit(ctx context.Context, before int64, limit int) ([]usher.AuditRecord, error) {
	if limit <= 0 {
		return nil, nil
	}
	top := "+inf"
	if before > 0 {
		top = "(" + itoa(before)
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	cmd := s.client.B().Zrevrangebyscore().Key(s.runtimeKeys()[1]).Max(top).Min("-inf").Limit(0, int64(limit)).Build()
	members, err := s.client.Do(ctx, cmd).AsStrSlice()
	if err != nil {
		return nil, fail("read audit", err)
	}
	out := make([]usher.AuditRecord, 0, len(members))
	for _, m := range members {
		vs, data, ok := strings.Cut(m, ":")
		v, err := strconv.ParseInt(vs, 10, 64)
		if !ok || err != nil {
			return nil, malformed("read audit", "member %.20q", m)
		}
		out = append(out, usher.AuditRecord{Version: v, Data: []byte(data)})
	}
	return out, nil
}
