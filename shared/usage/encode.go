package usage

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendJSON appends r's JSON encoding to dst. It produces the same JSON value as
// encoding/json.Marshal(r) (field names, omitempty rules, null key_id, RFC 3339 time with
// nanoseconds) without reflection or allocation beyond dst's growth: records are encoded
// on the request path of every inference request.
func (r *Record) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"request_id":`...)
	dst = appendString(dst, r.RequestID)
	dst = append(dst, `,"ts":"`...)
	dst = r.TS.AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, `","account_id":`...)
	dst = appendString(dst, r.AccountID)
	dst = append(dst, `,"key_id":`...)
	if r.KeyID == nil {
		dst = append(dst, "null"...)
	} else {
		dst = appendString(dst, *r.KeyID)
	}
	dst = append(dst, `,"model":`...)
	dst = appendString(dst, r.Model)
	dst = append(dst, `,"endpoint":`...)
	dst = appendString(dst, r.Endpoint)
	dst = append(dst, `,"stream":`...)
	dst = strconv.AppendBool(dst, r.Stream)
	if r.Provider != "" {
		dst = append(dst, `,"provider":`...)
		dst = appendString(dst, r.Provider)
	}
	if r.Residency != "" {
		dst = append(dst, `,"residency":`...)
		dst = appendString(dst, r.Residency)
	}
	dst = append(dst, `,"status":`...)
	dst = strconv.AppendInt(dst, int64(r.Status), 10)
	dst = append(dst, `,"result":`...)
	dst = appendString(dst, r.Result)
	dst = append(dst, `,"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, r.PromptTokens, 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, r.CompletionTokens, 10)
	dst = append(dst, `,"price_micro_sek":`...)
	dst = strconv.AppendInt(dst, r.PriceMicroSEK, 10)
	dst = append(dst, `,"duration_ms":`...)
	dst = strconv.AppendInt(dst, r.DurationMS, 10)
	if r.Routing != nil {
		dst = append(dst, `,"routing":{"policy":`...)
		dst = appendString(dst, r.Routing.Policy)
		if r.Routing.Translated {
			dst = append(dst, `,"translated":true`...)
		}
		dst = append(dst, `,"attempts":`...)
		if r.Routing.Attempts == nil {
			dst = append(dst, "null"...)
		} else {
			dst = append(dst, '[')
			for i := range r.Routing.Attempts {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = r.Routing.Attempts[i].appendJSON(dst)
			}
			dst = append(dst, ']')
		}
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

func (a *Attempt) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"route":`...)
	dst = appendString(dst, a.Route)
	dst = append(dst, `,"provider":`...)
	dst = appendString(dst, a.Provider)
	dst = append(dst, `,"region":`...)
	dst = appendString(dst, a.Region)
	dst = append(dst, `,"status":`...)
	dst = strconv.AppendInt(dst, int64(a.Status), 10)
	if a.Error != "" {
		dst = append(dst, `,"error":`...)
		dst = appendString(dst, a.Error)
	}
	dst = append(dst, `,"duration_ms":`...)
	dst = strconv.AppendInt(dst, a.DurationMS, 10)
	return append(dst, '}')
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string: quotes, backslashes and control characters
// escaped, invalid UTF-8 replaced by U+FFFD (as encoding/json does).
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
