package openapi

import (
	"bytes"
	"encoding/json"
	"sync"
)

// maxServed bounds the documents WithServer keeps, one per base URL (a node is reached
// under one or two).
const maxServed = 8

var (
	servedMu sync.Mutex
	served   = map[string][]byte{}
)

// WithServer returns the document with its servers naming base (scheme://host[:port],
// the URL clients reach the gateway at) instead of the templated {base_url} with its
// placeholder default. The slice is shared: callers must not modify it.
func WithServer(base string) []byte {
	servedMu.Lock()
	defer servedMu.Unlock()
	if d, ok := served[base]; ok {
		return d
	}
	d := replaceServers(document, base)
	if len(served) < maxServed {
		served[base] = d
	}
	return d
}

// replaceServers splices a servers array naming base into doc, in place of its own; doc
// comes back unchanged if it has no servers array in the expected layout.
func replaceServers(doc []byte, base string) []byte {
	const open, closing = "\n  \"servers\": [", "\n  ],"
	start := bytes.Index(doc, []byte(open))
	if start < 0 {
		return doc
	}
	n := bytes.Index(doc[start:], []byte(closing))
	if n < 0 {
		return doc
	}
	end := start + n + len(closing)
	url, _ := json.Marshal(base)
	desc, _ := json.Marshal("This gateway. OpenAI-style SDKs use " + base + "/v1; Messages-style SDKs use " + base + ".")
	var b bytes.Buffer
	b.Grow(len(doc) + len(base))
	b.Write(doc[:start])
	b.WriteString(open + "\n    {\n      \"url\": ")
	b.Write(url)
	b.WriteString(",\n      \"description\": ")
	b.Write(desc)
	b.WriteString("\n    }" + closing)
	b.Write(doc[end:])
	return b.Bytes()
}
