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
