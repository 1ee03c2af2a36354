package guard

import (
	"context"
	"crypto/sha256"
	"encoding"
	"encoding/binary"
	"errors"
	"math"
	"math/bits"
	"strconv"
)

// Solve finds the smallest counter n that solves challenge at difficulty
// (1 to 32), on one goroutine: what an app or usher bench does with a JSON
// challenge. It hashes the challenge's whole 64-byte blocks once and
// only the rest per attempt, as the browser's worker does. It stops with
// ctx's error when ctx is done (checked every 4,096 attempts).
func Solve(ctx context.Context, challenge string, difficulty int) (string, error) {
	if difficulty < MinDifficulty || difficulty > MaxDifficulty {
		return "", errors.New("solve: difficulty out of range")
	}
	n, _, err := solve(ctx, challenge, difficulty, math.MaxUint64)
	if err != nil {
		return "", err
	}
	return strconv.FormatUint(n, 10), nil
}

// solve tries the counters 0 to limit-1 and returns the first that solves
// the challenge; found is false when none does.
func solve(ctx context.Context, challenge string, difficulty int, limit uint64) (n uint64, found bool, err error) {
	prefix := append([]byte(challenge), ':')
	full := len(prefix) / sha256.BlockSize * sha256.BlockSize
	h := sha256.New()
	h.Write(prefix[:full])
	state, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return 0, false, err
	}
	restore := h.(encoding.BinaryUnmarshaler)
	tail := prefix[full:]
	msg := make([]byte, 0, len(tail)+20)
	var sum [sha256.Size]byte
	for n = 0; n < limit; n++ {
		if n&4095 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, false, err
			}
		}
		if err := restore.UnmarshalBinary(state); err != nil {
			return 0, false, err
		}
		msg = strconv.AppendUint(append(msg[:0], tail...), n, 10)
		h.Write(msg)
		if bits.LeadingZeros32(binary.BigEndian.Uint32(h.Sum(sum[:0]))) >= difficulty {
			return n, true, nil
		}
	}
	return 0, false, nil
}
