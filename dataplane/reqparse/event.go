package reqparse

import "bytes"

// EventMembers is where the members of a stream event's top-level object are, as
// ScanEvent noted them, so that a relay can read a member without reading the event again.
type EventMembers struct{ top members }

// ScanEvent is ValidJSON that also notes in m where the members of b's top-level object
// are. m is meaningful only when ScanEvent returned true.
func ScanEvent(b []byte, m *EventMembers) bool { return scan(b, false, &m.top).ok }

// Member returns the value of the first member of the event's top-level object whose key is
// name, as raw JSON, and whether there is one. known is false when the notes cannot tell:
// the object has more members than a scan notes, or a key has an escape (it might spell
// name); the caller then asks a full parser (gjson reads escaped keys unescaped). b must be
// the event ScanEvent accepted, and name must need no escaping.
func (m *EventMembers) Member(b []byte, name string) (val []byte, found, known bool) {
	if m.top.n < 0 {
		return nil, false, false
	}
	for _, at := range m.top.at[:m.top.n] {
		// From just past the key's opening quote to its value: the key, its closing quote,
		// whitespace and the colon, so a backslash in it is in the key.
		k := b[at.key+1 : at.val]
		if len(k) > len(name) && k[len(name)] == '"' && string(k[:len(name)]) == name {
			return b[at.val:at.end], true, true
		}
		if bytes.IndexByte(k, '\\') >= 0 {
			return nil, false, false
		}
	}
	return nil, false, true
}

// Members is Member for several names in one pass over the notes: vals[k] becomes the
// value of the member whose key is names[k] (nil: none); vals must be as long as names.
// known is false when the notes cannot tell (more members than a scan notes, or a key
// with an escape anywhere in the object), and when a name has more than one member (a
// JSON client keeps the last, a reader of the first would not see what it sees); vals are
// then not meaningful.
func (m *EventMembers) Members(b []byte, names []string, vals [][]byte) (known bool) {
	if m.top.n < 0 {
		return false
	}
	clear(vals)
	for _, at := range m.top.at[:m.top.n] {
		// The key runs from just past its opening quote to its closing quote; a backslash
		// before that quote is an escape (and the quote might be escaped).
		k := b[at.key+1 : at.val]
		e := 0
		for e < len(k) && k[e] != '"' {
			if k[e] == '\\' {
				return false
			}
			e++
		}
		k = k[:e]
		for i, name := range names {
			if len(k) == len(name) && string(k) == name {
				if vals[i] != nil {
					return false
				}
				vals[i] = b[at.val:at.end]
				break
			}
		}
	}
	return true
}

// Count is how many members the event's top-level object has, or -1 when it has more than
// a scan notes.
func (m *EventMembers) Count() int { return m.top.n }
