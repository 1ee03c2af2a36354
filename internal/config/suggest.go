package config

import (
	"maps"
	"slices"
)

// suggest returns the one of fields within a couple of edits of name, the
// usual misspelling, else "".
func suggest(name string, fields map[string]field) string {
	best, bestDist := "", 3
	for _, f := range slices.Sorted(maps.Keys(fields)) {
		if d := editDistance(name, f, bestDist); d < bestDist {
			best, bestDist = f, d
		}
	}
	return best
}

// editDistance returns the Levenshtein distance between a and b, or limit
// when it is at least limit (or the strings' lengths alone say so).
func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d >= limit || -d >= limit || len(a) > 64 || len(b) > 64 {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit)
}
