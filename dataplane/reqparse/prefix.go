package reqparse

import "unsafe"

// Span locates a part of the request body (Off, Len in bytes); the zero Span is empty.
type Span struct{ Off, Len int32 }

// In returns the spanned bytes of body (the body the request was parsed from).
func (s Span) In(body []byte) []byte {
	if s.Len <= 0 || int(s.Off)+int(s.Len) > len(body) {
		return nil
	}
	return body[s.Off : s.Off+s.Len]
}

// spanIn locates sub, a substring of the body s.
func spanIn(s, sub string) Span {
	if len(sub) == 0 {
		return Span{}
	}
	off := uintptr(unsafe.Pointer(unsafe.StringData(sub))) - uintptr(unsafe.Pointer(unsafe.StringData(s)))
	if off > uintptr(len(s)) {
		return Span{}
	}
	return Span{Off: int32(off), Len: int32(len(sub))}
}

var roleKeys = []string{"role"}

// leadingMessages returns the raw text of a messages array's stable start: its leading
// system and developer messages, or the first message when it has none (a conversation's
// first turn). Later messages vary from request to request.
func leadingMessages(arr string) string {
	start, end := -1, -1
	base := uintptr(unsafe.Pointer(unsafe.StringData(arr)))
	eachElement(arr, func(i int, e string) bool {
		var f [1]string
		pick(e, roleKeys, f[:])
		system := f[0] == `"system"` || f[0] == `"developer"`
		if i > 0 && !system {
			return false
		}
		off := int(uintptr(unsafe.Pointer(unsafe.StringData(e))) - base)
		if start < 0 {
			start = off
		}
		end = off + len(e)
		return system
	})
	if start < 0 {
		return ""
	}
	return arr[start:end]
}

// firstElement returns an array's first element's raw text, or a string value itself.
func firstElement(v string) string {
	if kindOf(v) == kString {
		return v
	}
	first := ""
	eachElement(v, func(_ int, e string) bool {
		first = e
		return false
	})
	return first
}

// stringSpan locates a string value (quotes included) in the body s; other kinds are none.
func stringSpan(s, v string) Span {
	if kindOf(v) != kString || len(v) <= 2 {
		return Span{}
	}
	return spanIn(s, v)
}
