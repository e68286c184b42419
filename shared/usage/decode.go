package usage

import (
	"encoding/json"
	"strconv"

	"github.com/tidwall/gjson"
)

// DecodeRecord decodes one record as encoding/json.Unmarshal would, faster: records
// arrive by the hundred thousand per second at the control plane. A record in the plain
// form AppendJSON writes (ASCII strings without escapes, integer numbers, each known field
// once) is read in one pass over its fields; anything else (escapes, non-ASCII text,
// other number forms, repeated or misplaced keys, invalid JSON) goes to
// encoding/json, so the result and whether it is an error are always encoding/json's.
func DecodeRecord(raw []byte) (Record, error) {
	var r Record
	if gjson.ValidBytes(raw) && fastRecord(raw, &r) {
		return r, nil
	}
	r = Record{}
	err := json.Unmarshal(raw, &r)
	return r, err
}

// DecodeValidRecord is DecodeRecord for raw already known to be one valid JSON value (a
// member of a document that was validated whole, as the control plane's batch reader
// does): it skips validating it again. On anything else its result is undefined.
func DecodeValidRecord(raw []byte) (Record, error) {
	var r Record
	if fastRecord(raw, &r) {
		return r, nil
	}
	r = Record{}
	err := json.Unmarshal(raw, &r)
	return r, err
}

// fieldsOnce walks the members of object v in order, calling read with each key (raw,
// quoted) and value; read returns the key's bit (one power of two per known key, 0 for an
// unknown one) and whether the value was in the plain form. It reports whether every
// member was known, plain and there once, stopping at the first that was not.
func fieldsOnce(v gjson.Result, read func(key string, val gjson.Result) (bit uint32, ok bool)) bool {
	ok := true
	var seen uint32
	v.ForEach(func(k, val gjson.Result) bool {
		var bit uint32
		bit, ok = read(k.Raw, val)
		if bit == 0 || seen&bit != 0 {
			ok = false
		}
		seen |= bit
		return ok
	})
	return ok
}

// fastRecord fills r from raw (valid JSON) and reports whether every value was in the
// plain form; false means r is unusable and encoding/json must decide.
func fastRecord(raw []byte, r *Record) bool {
	v := gjson.ParseBytes(raw)
	if !v.IsObject() {
		return false
	}
	return fieldsOnce(v, func(k string, val gjson.Result) (uint32, bool) {
		bit := recordFields[k] // 0: unknown keys, other spellings and escapes: encoding/json's rules
		ok := bit != 0
		switch k {
		case `"request_id"`:
			ok = plainString(val, &r.RequestID)
		case `"ts"`:
			ok = val.Type == gjson.String && r.TS.UnmarshalJSON([]byte(val.Raw)) == nil
		case `"account_id"`:
			ok = plainString(val, &r.AccountID)
		case `"key_id"`:
			if val.Type == gjson.Null {
				r.KeyID = nil
			} else {
				var s string
				ok = plainString(val, &s)
				r.KeyID = &s
			}
		case `"model"`:
			ok = plainString(val, &r.Model)
		case `"endpoint"`:
			ok = plainString(val, &r.Endpoint)
		case `"stream"`:
			ok = plainBool(val, &r.Stream)
		case `"provider"`:
			ok = plainString(val, &r.Provider)
		case `"residency"`:
			ok = plainString(val, &r.Residency)
		case `"status"`:
			var n int64
			ok = plainInt(val, &n)
			r.Status = int(n)
		case `"result"`:
			ok = plainString(val, &r.Result)
		case `"prompt_tokens"`:
			ok = plainInt(val, &r.PromptTokens)
		case `"completion_tokens"`:
			ok = plainInt(val, &r.CompletionTokens)
		case `"price_micro_sek"`:
			ok = plainInt(val, &r.PriceMicroSEK)
		case `"duration_ms"`:
			ok = plainInt(val, &r.DurationMS)
		case `"ttft_ms"`:
			ok = plainInt(val, &r.TTFTMS)
		case `"routing"`:
			ok = fastRouting(val, r)
		}
		return bit, ok
	})
}

var recordFields = map[string]uint32{
	`"request_id"`: 1 << 0, `"ts"`: 1 << 1, `"account_id"`: 1 << 2, `"key_id"`: 1 << 3, `"model"`: 1 << 4,
	`"endpoint"`: 1 << 5, `"stream"`: 1 << 6, `"provider"`: 1 << 7, `"residency"`: 1 << 8, `"status"`: 1 << 9,
	`"result"`: 1 << 10, `"prompt_tokens"`: 1 << 11, `"completion_tokens"`: 1 << 12, `"price_micro_sek"`: 1 << 13,
	`"duration_ms"`: 1 << 14, `"routing"`: 1 << 15, `"ttft_ms"`: 1 << 16,
}

// fastRouting reads a routing object; null leaves Routing nil, as encoding/json does for
// a field that was never set (and here none was: keys are seen once).
func fastRouting(val gjson.Result, r *Record) bool {
	if val.Type == gjson.Null {
		return true
	}
	if !val.IsObject() {
		return false
	}
	rt := &Routing{}
	ok := fieldsOnce(val, func(k string, v gjson.Result) (bit uint32, ok bool) {
		switch k {
		case `"policy"`:
			bit, ok = 1, plainString(v, &rt.Policy)
		case `"node_region"`:
			bit, ok = 2, plainString(v, &rt.NodeRegion)
		case `"translated"`:
			bit, ok = 4, plainBool(v, &rt.Translated)
		case `"usage_estimated"`:
			bit, ok = 8, plainBool(v, &rt.UsageEstimated)
		case `"attempts"`:
			bit, ok = 16, fastAttempts(v, rt)
		case `"balancer"`:
			bit, ok = 32, plainString(v, &rt.Balancer)
		case `"reason"`:
			bit, ok = 64, plainString(v, &rt.Reason)
		case `"server_queue"`:
			bit, ok = 128, plainInt(v, &rt.ServerQueue)
		case `"in_flight"`:
			bit, ok = 256, plainInt(v, &rt.InFlight)
		case `"queued_ms"`:
			bit, ok = 512, plainInt(v, &rt.QueuedMS)
		case `"output_underreported"`:
			bit, ok = 1024, plainBool(v, &rt.OutputUnderreported)
		case `"reported_output_tokens"`:
			bit, ok = 2048, plainInt(v, &rt.ReportedOutput)
		}
		return bit, ok
	})
	r.Routing = rt
	return ok
}

func fastAttempts(v gjson.Result, rt *Routing) bool {
	if v.Type == gjson.Null {
		return true
	}
	if !v.IsArray() {
		return false
	}
	ok := true
	rt.Attempts = []Attempt{}
	v.ForEach(func(_, e gjson.Result) bool {
		if !e.IsObject() {
			ok = false
			return false
		}
		var a Attempt
		ok = fieldsOnce(e, func(k string, f gjson.Result) (bit uint32, ok bool) {
			switch k {
			case `"route"`:
				bit, ok = 1, plainString(f, &a.Route)
			case `"provider"`:
				bit, ok = 2, plainString(f, &a.Provider)
			case `"region"`:
				bit, ok = 4, plainString(f, &a.Region)
			case `"status"`:
				var n int64
				bit, ok = 8, plainInt(f, &n)
				a.Status = int(n)
			case `"error"`:
				bit, ok = 16, plainString(f, &a.Error)
			case `"duration_ms"`:
				bit, ok = 32, plainInt(f, &a.DurationMS)
			}
			return bit, ok
		})
		rt.Attempts = append(rt.Attempts, a)
		return ok
	})
	return ok
}

// plainString accepts a string of printable ASCII without escapes: its value is its raw
// text between the quotes.
func plainString(v gjson.Result, dst *string) bool {
	if v.Type != gjson.String || len(v.Raw) < 2 {
		return false
	}
	s := v.Raw[1 : len(v.Raw)-1]
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '\\' || c == '"' {
			return false
		}
	}
	*dst = s
	return true
}

func plainBool(v gjson.Result, dst *bool) bool {
	switch v.Raw {
	case "true":
		*dst = true
	case "false":
		*dst = false
	default:
		return false
	}
	return true
}

// plainInt accepts an integer in the int64 range written without fraction or exponent.
func plainInt(v gjson.Result, dst *int64) bool {
	if v.Type != gjson.Number {
		return false
	}
	n, err := strconv.ParseInt(v.Raw, 10, 64)
	if err != nil {
		return false
	}
	*dst = n
	return true
}
