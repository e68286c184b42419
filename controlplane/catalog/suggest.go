package catalog

import "strings"

// suggest returns the known name closest to name by edit distance, or "" when none is
// close enough to be what was meant.
func suggest(name string, known []string) string {
	best, bestD := "", -1
	for _, k := range known {
		d := distance(strings.ToLower(name), strings.ToLower(k))
		if bestD < 0 || d < bestD {
			best, bestD = k, d
		}
	}
	if bestD < 0 || bestD > max(2, len(name)/4) || bestD >= len(name) {
		return ""
	}
	return best
}

// distance is the Levenshtein distance of a and b, by bytes.
func distance(a, b string) int {
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
	return prev[len(b)]
}
