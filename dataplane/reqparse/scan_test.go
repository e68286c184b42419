package reqparse

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/shared/apierror"
)

// The scan (scan.go) must answer exactly as the passes it replaced (reference_test.go):
// the same refusal with the same param and message for every body, and ValidJSON the same
// for every input.

var scanSeeds = []string{
	manyMembers(31) + `,"a":1,"a":2}`, manyMembers(32) + `}`, manyMembers(40) + `,"a":[1],"model":"m"}`,
	`{"\u0061":1,"a":2}`, `{"a" : {"x":[]} , "k":"v" ,"model" :1e3 }`, `{"a":{},"x":[],"k":""}`, `{"a":"\ud800"} `,
	`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
	` {"a" : [1, -0.5e+3, true, false, null, "x\"y\\z\/\b\f\n\r\t\u00e5"] } `,
	`{"x":"\ud83d\ude00","y":"\ud800","z":"\udc00","w":"\ud800\u0041","v":"\\ud800"}`,
	`{"x":1e999,"y":-1E+400,"z":1e-999,"w":2e500,"v":0.1e309,"u":1.7976931348623157e308}`,
	`{"v":0.1e309}`, `{"v":1e309}`, `{"v":123e306}`, `{"v":` + strings.Repeat("9", 250) + `e60}`, `{"v":1e0000000309}`,
	`{"v":` + strings.Repeat("1", 299) + `e10}`, `{"v":` + strings.Repeat("1", 300) + `e-10}`, `{"v":[1e308,1e309]}`,
	`{"v":9e308}`, `{"v":-1.8e308}`, `{"v":17976931348623159e292}`, `{"v":0.9e309}`,
	`{"n":` + strings.Repeat("9", 400) + `,"m":` + strings.Repeat("9", 299) + `.` + strings.Repeat("9", 400) + `}`,
	"{\"k\xff\":\"\xc3\x28\",\"a\":\"\xe2\x82\",\"b\":\"\xed\xa0\x80\",\"c\":\"\xc0\xaf\",\"d\":\"\xef\xbf\xbd\"}",
	`{"a":"\ud800` + "\xff" + `","b":1e999}`,
	`{"a":1e999,"b":"` + "\xff" + `"}`,
	strings.Repeat("[", 128) + strings.Repeat("]", 128),
	strings.Repeat("[", 129) + strings.Repeat("]", 129),
	`{"a":` + strings.Repeat("[", 127) + strings.Repeat("]", 127) + `}`,
	`]]]]` + strings.Repeat("[", 130),
	`{"a":x` + strings.Repeat("[", 130),
	`"\u12"`, `01`, `-`, `-0`, `1.`, `.5`, `1e`, `1e+`, `tru`, `nul`, `[1,]`, `{"a":1,}`, `{"a"}`,
	`{"a":1 "b":2}`, `[1 2]`, "\"a\x1fb\"", "\"a\x7fb\"", `{}`, `[]`, `""`, ` `, ``, `{"a":"b"`,
	`{"a":"\"}`, `{"\"":"]"}`, `[{"a":1,"k":[{"a":2}],"role":"x"},{"a":1,"a":2},3,{"k\u0061":1}]`,
	`[{"a":"\\\\\"\\"},{"a":"0123456789abcdef0123456789abcdef0123456789\\\"x\\"}]`, `[{"a":[{"b":{}}]}]`, "{\"a\":\"" + strings.Repeat("x", 37) + "\xe4\xb8\xad\"}",
}

// longStrings are bodies whose strings have long plain runs (the scan's plainRun) with a
// quote, escape, control or non-ASCII byte at each offset from 30 to 110, in one or in
// several strings, terminated or not.
func longStrings() []string {
	var out []string
	run := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 3)
	for _, c := range []string{`"`, `\\`, `\"`, `\u00e5`, `\ud800`, "\\", "\x1f", "\x7f", "\xc3\xa5", "\xff", "\xe4\xb8", "\n"} {
		for k := 30; k <= 110; k += 1 + k/40 {
			str := run[:k] + c + run[k:]
			out = append(out, `{"a":"`+str+`"}`, `{"a":"`+str, `["`+str+`","`+run+`","`+str+`"]`,
				`{"a":"`+run+`","b":"`+str+`","c":"`+run[:k]+`"}`)
		}
	}
	return out
}

// manyMembers is the start of an object with n members.
func manyMembers(n int) string {
	var b strings.Builder
	b.WriteString(`{"k":0`)
	for i := 1; i < n; i++ {
		b.WriteString(`,"k` + strings.Repeat("x", i) + `":[` + strings.Repeat("1,", i) + `2]`)
	}
	return b.String()
}

// front is Parse's validation before its field walk.
func front(t *testing.T, b []byte) *apierror.Error {
	var o topObject
	err := validate(b, &o)
	if err == nil {
		// The members the scan noted are the ones pick finds.
		names := []string{"a", "model", "k", "\u0061", "x"}
		var got, want [5]string
		gd, wd := o.pick(names, got[:]), pick(o.s[skipWS(o.s, 0):], names, want[:])
		if gd != wd || got != want {
			t.Fatalf("body %q: top-level pick %q %q, pick %q %q", b, gd, got, wd, want)
		}
	}
	return err
}

func param(e *apierror.Error) string {
	if e == nil {
		return ""
	}
	return e.Param
}

func checkScan(t *testing.T, b []byte) {
	t.Helper()
	s := string(b)
	if got, want := ValidJSON(b), refValidJSON(s); got != want {
		t.Fatalf("ValidJSON(%q) = %v, reference %v", b, got, want)
	}
	if scan(b, true, nil).ok != scan(b, false, nil).ok {
		t.Fatalf("strict and plain scans disagree on %q", b)
	}
	for i := range len(s) {
		if s[i] == '"' && stringEnd(s, i) != refStringEnd(s, i) {
			t.Fatalf("stringEnd(%q, %d) = %d, reference %d", s, i, stringEnd(s, i), refStringEnd(s, i))
		}
	}
	if ValidJSON(b) {
		checkEachObject(t, s[skipWS(s, 0):])
		if r := scan(b, true, nil); r.badUTF8 < 0 && r.surr < 0 {
			checkTextLen(t, s)
		}
	}
	got, want := front(t, b), refFront(s)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("body %q:\n got  %v (param %q)\n want %v (param %q)", b, got, param(got), want, param(want))
	}
}

// checkTextLen holds textLen of every string in the valid JSON text s, which has neither
// invalid UTF-8 nor lone surrogates, to the length of the string unescaped.
func checkTextLen(t *testing.T, s string) {
	t.Helper()
	for i := 0; i < len(s); i++ {
		if s[i] != '"' {
			continue
		}
		e := stringEnd(s, i)
		lit := s[i:e]
		if got, want := textLen(lit), int64(len(gjson.Parse(lit).Str)); got != want {
			t.Fatalf("textLen(%q) = %d, unescaped %d bytes", lit, got, want)
		}
		i = e - 1
	}
}

// checkEachObject holds eachObject to eachElement followed by pick, on the valid JSON v.
func checkEachObject(t *testing.T, v string) {
	t.Helper()
	names := []string{"a", "role", "k"}
	type elem struct {
		val, dup string
		f        [3]string
	}
	var got, want []elem
	var out [3]string
	eachObject(v, names, out[:], func(_ int, val, dup string) bool {
		got = append(got, elem{val, dup, out})
		return dup == ""
	})
	eachElement(v, func(_ int, val string) bool {
		var f [3]string
		d := ""
		if kindOf(val) == kObject {
			d = pick(val, names, f[:])
		}
		want = append(want, elem{val, d, f})
		return d == ""
	})
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("eachObject(%q) = %q, eachElement and pick %q", v, got, want)
	}
}

func FuzzScan(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	for _, s := range longStrings() {
		f.Add([]byte(s))
	}
	f.Add(proseBody(1 << 10))
	f.Add(chatBody(1 << 10))
	f.Add(messagesBody(1 << 10))
	f.Add(responsesBody(1 << 10))
	f.Add(streamEvent)
	f.Fuzz(checkScan)
}

// TestScanMatchesReference compares the scan with the reference on the seeds, on random
// strings of JSON tokens and awkward bytes, and on randomly mutated request bodies.
func TestScanMatchesReference(t *testing.T) {
	for _, s := range append(scanSeeds, longStrings()...) {
		checkScan(t, []byte(s))
	}
	rng := rand.New(rand.NewPCG(16, 2))
	tokens := []string{"{", "}", "[", "]", ",", ":", `"`, `"a"`, `"k":`, " ", "\n", "\t", "\r", `\`, `\"`,
		`\\`, `\n`, `\u`, `\ud83d`, `\ude00`, `\ud800`, `\u00e5`, `\uDFFF`, "0", "1", "9", "-", "+", ".", "e",
		"E", "1e999", "1e308", "1e309", "0.1e310", "e306", "00", "1e-400", "true", "false", "null", "tru", "x", "\xff", "\xc3", "\xa5", "\xe4\xb8\xad",
		"\xed\xa0\x80", "\x1f", "\x7f", "\x00", strings.Repeat("ab", 9), strings.Repeat("9", 310),
		strings.Repeat("plain text ", 4)}
	var sb strings.Builder
	for range 20000 {
		sb.Reset()
		for range 1 + rng.IntN(24) {
			sb.WriteString(tokens[rng.IntN(len(tokens))])
		}
		checkScan(t, []byte(sb.String()))
	}
	// Mutations keep most of a valid body, so the checks deep inside it are reached.
	bodies := [][]byte{chatBody(600), messagesBody(600), responsesBody(600), []byte(scanSeeds[2]), []byte(scanSeeds[3]),
		proseBody(600), oneMessageBody(300)}
	awkward := []byte("\"\\{}[],: \n0e-.u\xff\x80\x1fdD8")
	for range 10000 {
		b := append([]byte(nil), bodies[rng.IntN(len(bodies))]...)
		for range 1 + rng.IntN(3) {
			k := rng.IntN(len(b))
			switch c := awkward[rng.IntN(len(awkward))]; rng.IntN(3) {
			case 0:
				b[k] = c
			case 1:
				b = append(b[:k], b[k+1:]...)
			default:
				b = append(b[:k], append([]byte{c}, b[k:]...)...)
			}
		}
		checkScan(t, b)
	}
}
