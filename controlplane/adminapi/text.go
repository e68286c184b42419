package adminapi

// UnsafeRune reports the characters that change what a terminal shows: C0 and C1 control
// characters, DEL, and the bidirectional formatting characters that reorder text. The
// signup form refuses them in what it stores, and gatewayctl escapes them in what it
// prints; both ask here, so the two never disagree.
func UnsafeRune(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return false
}
