package proxy

import (
	"encoding/json"
	"testing"

	"github.com/sekgate/gateway/dataplane/tokens"
)

// stdChunkOutput is chunkOutput as a standard decoder (encoding/json, which keeps a
// duplicated member's last value) reads the choices: the reference the scan is held to.
func stdChunkOutput(t testing.TB, choices []byte, text bool) tokens.Delivered {
	var d tokens.Delivered
	var list []json.RawMessage
	if json.Unmarshal(choices, &list) != nil {
		return d
	}
	for _, c := range list {
		var choice map[string]json.RawMessage
		if json.Unmarshal(c, &choice) != nil {
			continue
		}
		var n int64
		named := false
		if text {
			n = stdText(choice["text"])
		} else {
			n = stdDelta(choice["delta"], &named) + stdDelta(choice["message"], &named)
		}
		if n > 0 {
			d.Pieces++
			d.Bytes += n
		}
	}
	return d
}

func stdDelta(raw json.RawMessage, named *bool) int64 {
	var d map[string]json.RawMessage
	if json.Unmarshal(raw, &d) != nil {
		return 0
	}
	n := stdText(d["content"]) + stdText(d["refusal"]) + max(stdText(d["reasoning"]), stdText(d["reasoning_content"]))
	n += stdFunction(d["function_call"], named)
	var calls []json.RawMessage
	if json.Unmarshal(d["tool_calls"], &calls) == nil {
		for _, c := range calls {
			var call map[string]json.RawMessage
			if json.Unmarshal(c, &call) == nil {
				n += stdFunction(call["function"], named)
			}
		}
	}
	return n
}

func stdFunction(raw json.RawMessage, named *bool) int64 {
	var f map[string]json.RawMessage
	if json.Unmarshal(raw, &f) != nil {
		return 0
	}
	var args string
	if json.Unmarshal(f["arguments"], &args) != nil {
		return tokens.NameBytes(stdText(f["name"])) + stdText(f["arguments"])
	}
	return tokens.NameBytes(stdText(f["name"])) + tokens.ArgBytes(args)
}

// stdText is a string's decoded length, an array's or object's JSON length, else 0.
func stdText(raw json.RawMessage) int64 {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return int64(len(s))
	}
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '[', '{':
			return int64(len(trimSpace(raw)))
		}
		return 0
	}
	return 0
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
