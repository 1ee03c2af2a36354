package redis

import (
	_ "embed"

	"github.com/valkey-io/valkey-go"
)

// The scripts' sources: common.lua is shared by all, room.lua by the ones
// that write. Go joins them, so each script is one self-contained text.
var (
	//go:embed scripts/common.lua
	commonLua string
	//go:embed scripts/room.lua
	roomLua string
	//go:embed scripts/admit.lua
	admitLua string
	//go:embed scripts/renew.lua
	renewLua string
	//go:embed scripts/peek.lua
	peekLua string
	//go:embed scripts/stats.lua
	statsLua string
	//go:embed scripts/view.lua
	viewLua string
	//go:embed scripts/moves.lua
	movesLua string
	//go:embed scripts/cross.lua
	crossLua string
	//go:embed scripts/horizon.lua
	horizonLua string
)

// scripts are the Lua scripts a Store runs.
type scripts struct {
	admit, renew, peek, stats, view, moves, cross, horizon source
}

func newScripts() scripts {
	return scripts{
		admit: newSource(commonLua + roomLua + admitLua),
		renew: newSource(commonLua + roomLua + renewLua),
		peek:  newSource(commonLua + roomLua + peekLua),
		view:  newSource(commonLua + roomLua + viewLua),
		moves: newSource(commonLua + roomLua + movesLua),
		// A room spread over shards (shards.go).
		cross:   newSource(commonLua + roomLua + crossLua),
		horizon: newSource(commonLua + roomLua + horizonLua),
		stats:   source{readOnly: true, text: commonLua + statsLua, sha: sha(commonLua + statsLua)},
	}
}

// ints reads an array reply of len(dst) integers into dst.
func ints(op string, res valkey.ValkeyResult, dst []int64) error {
	if err := res.Error(); err != nil {
		return fail(op, err)
	}
	arr, err := res.ToArray()
	if err != nil {
		return malformed(op, "%v", err)
	}
	if len(arr) != len(dst) {
		return malformed(op, "%d values, want %d", len(arr), len(dst))
	}
	for i := range arr {
		v, err := arr[i].ToInt64()
		if err != nil {
			return malformed(op, "value %d: %v", i, err)
		}
		dst[i] = v
	}
	return nil
}
