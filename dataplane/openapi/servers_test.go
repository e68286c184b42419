package openapi

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestWithServer(t *testing.T) {
	for _, base := range []string{"https://api.example.com", "http://127.0.0.1:18080", `http://x"y`} {
		d := WithServer(base)
		var doc map[string]any
		if err := json.Unmarshal(d, &doc); err != nil {
			t.Fatalf("%s: not JSON: %v", base, err)
		}
		servers, _ := doc["servers"].([]any)
		if len(servers) != 1 {
			t.Fatalf("%s: servers %v", base, doc["servers"])
		}
		s, _ := servers[0].(map[string]any)
		if s["url"] != base || s["variables"] != nil {
			t.Errorf("%s: server %v", base, s)
		}
		if bytes.Contains(d, []byte("127.0.0.1:8080")) || bytes.Contains(d[:bytes.Index(d, []byte(`"security"`))], []byte("{base_url}")) {
			t.Errorf("%s: placeholder left in the servers", base)
		}
		// Everything but the servers is the embedded document's.
		var orig map[string]any
		_ = json.Unmarshal(Document(), &orig)
		if len(orig) != len(doc) || len(d) < len(Document())/2 {
			t.Errorf("%s: document changed beyond its servers", base)
		}
	}
	if &WithServer("https://a.example")[0] != &WithServer("https://a.example")[0] {
		t.Error("the document for one base URL is rebuilt on each call")
	}
}
