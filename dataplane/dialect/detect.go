package dialect

import (
	"bytes"
	"unsafe"
)

// Signs only one server writes in its chat answers and chunks (object keys: a key cannot
// appear unescaped inside a JSON string, so generated text cannot fake one).
var (
	signMatchedStop = []byte(`"matched_stop"`) // SGLang
	signStopReason  = []byte(`"stop_reason"`)  // vLLM
	signTimings     = []byte(`"timings"`)      // llama.cpp server
	signFingerprint = []byte(`"system_fingerprint"`)
)

// Detect names the server whose chat completion or chunk b is, by the members only that
// server writes: SGLang's matched_stop, vLLM's stop_reason, llama.cpp's timings or its
// build fingerprint (b1234-…), TGI's "-native" fingerprint, Ollama's fp_ollama. ok is false
// when b shows no sign (vLLM's chunks name stop_reason only at the end).
func Detect(b []byte) (s Server, ok bool) {
	// One pass over the keys' opening quotes (a chunk is read once per event: no search per
	// sign).
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 || i+j+1 >= len(b) {
			return OpenAI, false
		}
		k := b[i+j:]
		switch k[1] {
		case 'm':
			if bytes.HasPrefix(k, signMatchedStop) {
				return SGLang, true
			}
		case 's':
			if bytes.HasPrefix(k, signStopReason) {
				return VLLM, true
			}
			if bytes.HasPrefix(k, signFingerprint) {
				if s, ok := fingerprintServer(fingerprint(k)); ok {
					return s, true
				}
			}
		case 't':
			if bytes.HasPrefix(k, signTimings) {
				return LlamaCpp, true
			}
		}
		i += j + 1
	}
}

// fingerprintServer names the server of a system_fingerprint.
func fingerprintServer(fp string) (Server, bool) {
	switch {
	case fp == "fp_ollama":
		return Ollama, true
	case len(fp) > len("-native") && fp[len(fp)-len("-native"):] == "-native":
		return TGI, true
	case llamaBuild(fp):
		return LlamaCpp, true
	}
	return OpenAI, false
}

// fingerprint is the value of b's system_fingerprint member (read in place, without
// allocating: fingerprints hold no escapes; "" when it is not a plain string).
func fingerprint(b []byte) string {
	i := bytes.Index(b, signFingerprint)
	if i < 0 {
		return ""
	}
	v := bytes.TrimLeft(b[i+len(signFingerprint):], " \t\r\n")
	if len(v) == 0 || v[0] != ':' {
		return ""
	}
	v = bytes.TrimLeft(v[1:], " \t\r\n")
	if len(v) == 0 || v[0] != '"' {
		return ""
	}
	end := bytes.IndexAny(v[1:], "\"\\")
	if end < 0 || v[1+end] != '"' {
		return ""
	}
	return unsafe.String(unsafe.SliceData(v[1:]), end)
}

// llamaBuild reports whether fp is llama.cpp's build fingerprint: "b", digits, "-".
func llamaBuild(fp string) bool {
	if len(fp) < 3 || fp[0] != 'b' {
		return false
	}
	i := 1
	for i < len(fp) && fp[i] >= '0' && fp[i] <= '9' {
		i++
	}
	return i > 1 && i < len(fp) && fp[i] == '-'
}
