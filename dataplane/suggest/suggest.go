// Package suggest finds the names closest to a mistyped one, for did-you-mean answers.
package suggest

// Distance is the optimal-string-alignment distance of a and b (insertions,
// deletions, substitutions and swaps of adjacent bytes, each one edit), or limit+1 as soon
// as it must exceed limit.
func Distance(a, b string, limit int) int {
	if d := len(a) - len(b); d > limit || -d > limit {
		return limit + 1
	}
	rows := make([]int, 3*(len(b)+1))
	pprev, prev, cur := rows[:len(b)+1], rows[len(b)+1:2*(len(b)+1)], rows[2*(len(b)+1):]
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], pprev[j-2]+1)
			}
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > limit {
			return limit + 1
		}
		pprev, prev, cur = prev, cur, pprev
	}
	return prev[len(b)]
}

// Lower lower-cases the ASCII letters of s, keeping every other byte (and so its
// length) as it is.
func Lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
