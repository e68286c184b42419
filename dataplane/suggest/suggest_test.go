package suggest

import "testing"

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b  string
		limit int
		want  int
	}{
		{"", "", 3, 0},
		{"models", "models", 3, 0},
		{"modles", "models", 3, 1}, // a swap is one edit
		{"completion", "completions", 3, 1},
		{"kitten", "sitting", 3, 3},
		{"kitten", "sitting", 2, 3}, // over the limit: limit+1
		{"a", "abcdef", 2, 3},
	} {
		if got := Distance(tt.a, tt.b, tt.limit); got != tt.want {
			t.Errorf("Distance(%q, %q, %d) = %d, want %d", tt.a, tt.b, tt.limit, got, tt.want)
		}
	}
}
