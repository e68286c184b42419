package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/sekgate/gateway/shared/usage"
)

// checkSplit fails unless splitBatch, when it takes a body, reads what encoding/json
// reads from it.
func checkSplit(t *testing.T, body []byte) bool {
	t.Helper()
	got, ok := splitBatch(body)
	if !ok {
		return false
	}
	var want rawBatch
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&want); err != nil || dec.More() {
		t.Fatalf("%q: split, but encoding/json refuses it: %v", body, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got %+v\nwant %+v", body, got, want)
	}
	return true
}

func TestSplitBatchMatchesEncodingJSON(t *testing.T) {
	key := "key_0123456789ab"
	rec := usage.Record{RequestID: "req_1", TS: time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC), AccountID: "acct_1", KeyID: &key,
		Model: "m", Status: 200, Result: usage.ResultOK, Routing: &usage.Routing{Policy: "se"}}
	node := []byte(`{"node_id":"n-1","batch_id":"01JD","records":[`)
	node = rec.AppendJSON(node)
	node = append(node, ',')
	node = rec.AppendJSON(node)
	node = append(node, "]}"...)
	if !checkSplit(t, node) {
		t.Fatal("a batch as nodes write it missed the fast path")
	}
	for _, body := range []string{
		`{"records":[]}`, `{"records":[1,"x",null,{"a":[1]}, {} ]}`, ` { "node_id" : "n" , "records" : [ {"x":1} ] } `,
	} {
		if !checkSplit(t, []byte(body)) {
			t.Errorf("%s missed the fast path", body)
		}
	}
	for _, body := range []string{
		``, `null`, `[]`, `{}`, `{"records":null}`, `{"records":{}}`, `{"node_id":1,"records":[]}`,
		`{"node_id":"a\"b","records":[]}`, `{"node_id":"caf\u00e9","records":[]}`, "{\"node_id\":\"\xff\",\"records\":[]}",
		`{"NODE_ID":"n","records":[]}`, `{"records":[],"records":[]}`, `{"records":[]} {}`, `{"records":[],"x":1}`,
		`{"records":[}`,
	} {
		if checkSplit(t, []byte(body)) {
			t.Errorf("%q took the fast path", body)
		}
	}
}

func FuzzSplitBatch(f *testing.F) {
	f.Add([]byte(`{"node_id":"n","batch_id":"b","records":[{"request_id":"r"},2]}`))
	f.Add([]byte(`{"records":[[],{},"",0]}`))
	f.Fuzz(func(t *testing.T, body []byte) { checkSplit(t, body) })
}
