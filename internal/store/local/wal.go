package local

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// The log. What must be durable before an answer leaves (an admission, a
// renewal) and what is written behind (waiting check-ins) is appended to a
// log beside the bbolt file, one frame per flush, and synced: one
// sequential write and one fdatasync however many admissions the flush
// carries (group commit, Store.sync). The bbolt file takes the log's
// frames in the background (compaction), many flushes in one transaction,
// so that a B+tree leaf is written once for all the visitors it holds
// rather than once per flush.
//
// Files: <path>.wal.<gen>, gen a decimal number; the highest is the one
// appended to, the lower ones are being compacted (or were, when a crash
// came before they were removed). A frame is
//
//	length uint32 (of the payload) | crc32c uint32 (of the payload) | payload
//
// and a payload is the flush's watermark (unix ms, int64) followed by its
// writes, each
//
//	room length uint16 | room | cell key (17 bytes, encodeCellKey) |
//	value length uint8 | value (0 bytes: delete the key)
//
// big-endian. Every value is the key's whole value, not a change to it, so
// applying a frame twice changes nothing (replay is idempotent), and
// applying the frames in order leaves each key as the last one wrote it.
// A frame cut short or whose checksum fails ends the file: a kill -9 in the
// middle of a write leaves only the last frame torn, and that frame's sync
// never returned, so no answer that depended on it left.

const (
	walInfix        = ".wal."
	frameHeader     = 8
	maxFramePayload = 1 << 30
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// logFile is what the log needs of its file (an *os.File; a test may
// stand in one that fails).
type logFile interface {
	io.WriterAt
	Sync() error
	Close() error
}

// walChunk is how far the file is extended at a time, with zeros written
// and synced: a frame is then written over blocks the file already has,
// and its fdatasync has no file size or block map to write (appending to
// the file's end made each sync a journal commit as well, and the admission
// it carried slower than on the B+tree).
const walChunk = 1 << 20

// wal is the file being appended to. Its methods are called with
// Store.flushMu held.
type wal struct {
	base  string // the bbolt file's path
	gen   uint64
	f     logFile
	size  int64 // the whole frames' length
	alloc int64 // the file's length: zeros past size
	buf   []byte
	// broken is set when a failed append could not be undone: the file may
	// end in a partial frame that later frames would hide behind.
	broken error
}

// walPath returns the path of log generation gen of the store at base.
func walPath(base string, gen uint64) string {
	return base + walInfix + strconv.FormatUint(gen, 10)
}

// walGens lists the log generations on disk for the store at base, oldest
// first.
func walGens(base string) ([]uint64, error) {
	dir, name := filepath.Split(base)
	if dir == "" {
		dir = "."
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var gens []uint64
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), name+walInfix)
		if !ok {
			continue
		}
		g, err := strconv.ParseUint(rest, 10, 64)
		if err != nil {
			continue
		}
		gens = append(gens, g)
	}
	slices.Sort(gens)
	return gens, nil
}

// createWAL creates log generation gen and makes its name durable.
func createWAL(base string, gen uint64) (*wal, error) {
	f, err := os.OpenFile(walPath(base, gen), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syncDir(filepath.Dir(base)); err != nil {
		f.Close()
		return nil, err
	}
	return &wal{base: base, gen: gen, f: f}, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// appendWrite encodes one write into the frame being built.
func appendWrite(b []byte, room string, k cellKey, val []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(room)))
	b = append(b, room...)
	b = append(b, k.kind)
	b = binary.BigEndian.AppendUint64(b, uint64(k.exp))
	b = binary.BigEndian.AppendUint64(b, uint64(k.bucket))
	b = append(b, byte(len(val)))
	return append(b, val...)
}

// begin starts a frame whose watermark is markMs and returns the buffer to
// append its writes to.
func (w *wal) begin(markMs int64) []byte {
	b := append(w.buf[:0], make([]byte, frameHeader)...)
	return binary.BigEndian.AppendUint64(b, uint64(markMs))
}

// commit writes the frame b (from begin) and syncs it. On failure the file
// is cut back to where it was, so that the next frame follows the last
// whole one.
func (w *wal) commit(b []byte) error {
	w.buf = b[:0]
	if w.broken != nil {
		return fmt.Errorf("log %s: %w", walPath(w.base, w.gen), w.broken)
	}
	payload := b[frameHeader:]
	if len(payload) > maxFramePayload {
		return fmt.Errorf("log frame of %d bytes", len(payload))
	}
	binary.BigEndian.PutUint32(b, uint32(len(payload)))
	binary.BigEndian.PutUint32(b[4:], crc32.Checksum(payload, crcTable))
	var err error
	if end := w.size + int64(len(b)); end > w.alloc {
		// Past the zeros: extend the file by a chunk (the frame and the
		// chunk's zeros are synced together below).
		grow := max(walChunk, end-w.alloc)
		if _, err = w.f.WriteAt(make([]byte, grow), w.alloc); err == nil {
			w.alloc += grow
		}
	}
	if err == nil {
		_, err = w.f.WriteAt(b, w.size)
	}
	if err == nil {
		err = w.f.Sync()
	}
	if err != nil {
		if zerr := w.undo(len(b)); zerr != nil {
			w.broken = zerr
		}
		return fmt.Errorf("append to log %s: %w", walPath(w.base, w.gen), err)
	}
	w.size += int64(len(b))
	return nil
}

// undo writes zeros over a frame of n bytes whose write or sync failed:
// the next frame is written in its place, and what the failed one left
// past a shorter next frame must not read as a frame.
func (w *wal) undo(n int) error {
	n = int(min(int64(n), max(w.alloc-w.size, 0)))
	if n == 0 {
		return nil
	}
	if _, err := w.f.WriteAt(make([]byte, n), w.size); err != nil {
		return err
	}
	return w.f.Sync()
}

// logWrite is one write read back from the log.
type logWrite struct {
	room string
	key  []byte // encodeCellKey's 17 bytes
	val  []byte // nil: delete
}

// readWAL calls fn for each whole frame of the file, in order, with its
// watermark and writes (which alias a buffer reused from frame to frame).
// It stops at the first frame cut short or whose checksum fails, and
// reports the length of the whole frames.
func readWAL(path string, fn func(markMs int64, ws []logWrite) error) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var off int64
	var ws []logWrite
	for {
		rest := data[off:]
		if len(rest) < frameHeader {
			return off, nil
		}
		n := int64(binary.BigEndian.Uint32(rest))
		if n < 8 || n > int64(len(rest)-frameHeader) {
			return off, nil
		}
		payload := rest[frameHeader : frameHeader+n]
		if crc32.Checksum(payload, crcTable) != binary.BigEndian.Uint32(rest[4:]) {
			return off, nil
		}
		ws, err = decodeFrame(payload[8:], ws[:0])
		if err != nil {
			// A frame whose checksum holds but which does not parse was
			// written wrong, not torn.
			return off, fmt.Errorf("log %s at %d: %w", path, off, err)
		}
		if err := fn(int64(binary.BigEndian.Uint64(payload)), ws); err != nil {
			return off, err
		}
		off += frameHeader + n
	}
}

var errShortWrite = errors.New("write cut short")

func decodeFrame(b []byte, ws []logWrite) ([]logWrite, error) {
	for len(b) > 0 {
		if len(b) < 2 {
			return ws, errShortWrite
		}
		rl := int(binary.BigEndian.Uint16(b))
		b = b[2:]
		if len(b) < rl+17+1 {
			return ws, errShortWrite
		}
		w := logWrite{room: string(b[:rl]), key: b[rl : rl+17]}
		b = b[rl+17:]
		vl := int(b[0])
		b = b[1:]
		if len(b) < vl {
			return ws, errShortWrite
		}
		if vl > 0 {
			w.val = b[:vl]
		}
		b = b[vl:]
		ws = append(ws, w)
	}
	return ws, nil
}

// walState is what log generations leave, each key's last value and the
// last watermark, to be applied to the file.
type walState struct {
	last   map[string]logWrite // by room length, room and key
	markMs int64
	marked bool
}

// read adds the frames of log generation gen, which follows those read
// before.
func (st *walState) read(base string, gen uint64) error {
	if st.last == nil {
		st.last = map[string]logWrite{}
	}
	_, err := readWAL(walPath(base, gen), func(markMs int64, ws []logWrite) error {
		for _, w := range ws {
			k := make([]byte, 0, 2+len(w.room)+len(w.key))
			k = binary.BigEndian.AppendUint16(k, uint16(len(w.room)))
			k = append(append(k, w.room...), w.key...)
			st.last[string(k)] = w
		}
		st.markMs, st.marked = markMs, true
		return nil
	})
	return err
}

// apply writes the state to tx (rooms and the watermark) as a flush into
// the file would have, in key order: a B+tree takes sorted keys at the
// ends of its nodes (random ones shift every node's entries up to make
// room, which a profile of the compaction showed as most of its time).
func (st *walState) apply(tx *bolt.Tx) error {
	if !st.marked {
		return nil
	}
	keys := make([]string, 0, len(st.last))
	for k := range st.last {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	rooms := tx.Bucket(bucketRooms)
	var rb *bolt.Bucket
	var room string
	for _, k := range keys {
		w := st.last[k]
		if rb == nil || w.room != room {
			var err error
			if rb, err = rooms.CreateBucketIfNotExists([]byte(w.room)); err != nil {
				return err
			}
			room = w.room
		}
		var err error
		if w.val == nil {
			err = rb.Delete(w.key)
		} else {
			err = rb.Put(w.key, w.val)
		}
		if err != nil {
			return err
		}
	}
	return tx.Bucket(bucketMeta).Put(keyMark, binary.BigEndian.AppendUint64(nil, uint64(st.markMs)))
}
