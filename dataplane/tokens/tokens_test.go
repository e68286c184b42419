package tokens

import (
	"math"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/reqparse"
	"github.com/sekgate/gateway/shared/usage"
)

func TestCount(t *testing.T) {
	tests := []struct {
		raw  string
		want int64
		ok   bool
	}{
		{`0`, 0, true},
		{`17`, 17, true},
		{`9223372036854775807`, math.MaxInt64, true}, // fits; the bounds refuse it
		{`9223372036854775808`, math.MaxInt64, false},
		{`99999999999999999999999`, math.MaxInt64, false},
		{`1e999`, math.MaxInt64, false},
		{`1e3`, 1000, false},
		{`12.9`, 12, false},
		{`-5`, 0, false},
		{`-1e999`, 0, false},
		{`"12"`, 0, false},
		{`true`, 0, false},
		{`{}`, 0, false},
		{`[1]`, 0, false},
		{`null`, 0, true},
	}
	for _, tt := range tests {
		n, ok := Count(gjson.Parse(tt.raw))
		if n != tt.want || ok != tt.ok {
			t.Errorf("Count(%s) = %d %v, want %d %v", tt.raw, n, ok, tt.want, tt.ok)
		}
	}
	if n, ok := Count(gjson.Get(`{}`, "absent")); n != 0 || !ok {
		t.Errorf("absent: %d %v", n, ok)
	}
}

func TestBounds(t *testing.T) {
	tests := []struct {
		name            string
		b               Bounds
		in, out         int64
		wantIn, wantOut int64
		ok              bool
	}{
		{"within", NewBounds(8192, 100, 0), 8000, 100, 8000, 100, true},
		{"prompt over window", NewBounds(8192, 100, 0), 8193, 1, 8192, 1, false},
		{"output over max_tokens", NewBounds(8192, 100, 0), 10, 101, 10, 100, false},
		{"output limit defaults to window", NewBounds(8192, 0, 0), 10, 8192, 10, 8192, true},
		{"int64 max", NewBounds(8192, 0, 0), math.MaxInt64, math.MaxInt64, 8192, 8192, false},
		{"unknown window", NewBounds(0, 0, 0), DefaultWindow, DefaultWindow + 1, DefaultWindow, DefaultWindow, false},
		{"embedding inputs multiply", NewBounds(512, 0, 4), 2048, 0, 2048, 0, true},
		{"embedding inputs over", NewBounds(512, 0, 4), 2049, 0, 2048, 0, false},
		{"negative", NewBounds(512, 0, 0), -1, 3, 0, 3, false},
		{"zero bounds", Bounds{}, 5, 6, 5, 6, true},
	}
	for _, tt := range tests {
		in, out, ok := tt.b.Check(tt.in, tt.out)
		if in != tt.wantIn || out != tt.wantOut || ok != tt.ok {
			t.Errorf("%s: got %d %d %v, want %d %d %v", tt.name, in, out, ok, tt.wantIn, tt.wantOut, tt.ok)
		}
	}
	if b := NewBounds(8192, 100, 0).WithChoices(3); b.Output != 300 || b.Prompt != 8192 {
		t.Errorf("choices: %+v", b)
	}
	if b := NewBounds(0, 0, 0).WithChoices(math.MaxInt64); b.Output != math.MaxInt64 {
		t.Errorf("choices overflow: %+v", b)
	}
	if b := NewBounds(math.MaxInt64/2, 0, 3); b.Prompt != usage.MaxRecordTokens {
		t.Errorf("inputs overflow: %d, want the record's bound", b.Prompt)
	}
	if b := NewBounds(8192, 0, 2048); b.Prompt != usage.MaxRecordTokens {
		t.Errorf("2048 inputs of 8192: prompt bound %d, want the record's bound", b.Prompt)
	}
}

func TestFromEndpoint(t *testing.T) {
	tests := []struct {
		e    index.Endpoint
		body string
		want Usage
		ok   bool
	}{
		{index.EPChat, `{"usage":{"prompt_tokens":3,"completion_tokens":4}}`, Usage{InputTokens: 3, OutputTokens: 4}, true},
		{index.EPEmbeddings, `{"usage":{"prompt_tokens":3,"total_tokens":9}}`, Usage{InputTokens: 3}, true},
		{index.EPMessages, `{"usage":{"input_tokens":3,"cache_read_input_tokens":2,"output_tokens":4}}`, Usage{InputTokens: 5, OutputTokens: 4}, true},
		{index.EPResponses, `{"usage":{"input_tokens":3,"output_tokens":-4}}`, Usage{InputTokens: 3, Invalid: true}, true},
		{index.EPSystemOne, `{"usage":{"input_tokens":3,"output_tokens":4}}`, Usage{InputTokens: 3, OutputTokens: 4}, true},
		{index.EPChat, `{"usage":null}`, Usage{}, false},
	}
	for _, tt := range tests {
		var m reqparse.EventMembers
		if !reqparse.ScanEvent([]byte(tt.body), &m) {
			t.Fatalf("%s: not valid JSON", tt.body)
		}
		for _, notes := range []*reqparse.EventMembers{nil, &m} {
			got, ok := FromBody(tt.e, []byte(tt.body), notes)
			if got != tt.want || ok != tt.ok {
				t.Errorf("%v %s (notes %v): got %+v %v, want %+v %v", tt.e, tt.body, notes != nil, got, ok, tt.want, tt.ok)
			}
		}
	}
}

// FuzzFromBody: any body yields counts that are never negative, and bounded counts never
// exceed their bounds; a body the scan accepts gives the same usage from its notes as from
// the whole body.
func FuzzFromBody(f *testing.F) {
	for _, s := range append([]string{`{"usage":{"prompt_tokens":1e999,"completion_tokens":-5}}`,
		`{"usage":{"input_tokens":9223372036854775807,"cache_read_input_tokens":9223372036854775807}}`,
		`{"usage":{"prompt_tokens":"7","total_tokens":3.5}}`, `{"usage":[`}, fromBodyCases...) {
		f.Add([]byte(s), uint8(0))
	}
	f.Fuzz(func(t *testing.T, body []byte, e uint8) {
		checkFromBodyNotes(t, body)
		ep := []index.Endpoint{index.EPChat, index.EPEmbeddings, index.EPMessages, index.EPResponses}[int(e)%4]
		u, _ := FromBody(ep, body, nil)
		if u.InputTokens < 0 || u.OutputTokens < 0 {
			t.Fatalf("negative: %+v", u)
		}
		b := NewBounds(4096, 256, 0)
		in, out, _ := b.Check(u.InputTokens, u.OutputTokens)
		if in > b.Prompt || out > b.Output || in < 0 || out < 0 {
			t.Fatalf("out of bounds: %d %d", in, out)
		}
	})
}

func TestEstimateOutput(t *testing.T) {
	tests := []struct {
		e    index.Endpoint
		body string
		want int64
	}{
		{index.EPChat, `{"choices":[{"message":{"content":"` + strings.Repeat("a", 50) + `"}},{"message":{"content":"bbbbb","tool_calls":[{"function":{"arguments":"{\"x\":1}"}}]}}]}`, 7},
		{index.EPCompletions, `{"choices":[{"text":"0123456789"}]}`, 1},
		{index.EPMessages, `{"content":[{"type":"text","text":"0123456789"},{"type":"tool_use","input":{"a":"b"}}]}`, 2},
		{index.EPMessages, `{"content":[{"type":"text","text":"` + strings.Repeat("a", 40) + `","text":"` + strings.Repeat("b", 40) + `"}]}`, 10},
		{index.EPResponses, `{"output":[{"content":[{"text":"0123456789"}]},{"arguments":"{}"}]}`, 1},
		{index.EPResponses, `{"output":[{"id":"` + strings.Repeat("i", 80) + `","type":"message","content":[{"type":"output_text","text":"` + strings.Repeat("a", 80) + `","annotations":[]}]}]}`, 10},
		{index.EPChat, `{"choices":[{"message":{"reasoning":"` + strings.Repeat("r", 80) + `","reasoning_content":"` + strings.Repeat("r", 80) + `"}}]}`, 10},
		{index.EPEmbeddings, `{"data":[{"embedding":[1,2]}]}`, 0},
		{index.EPChat, `not json`, 0},
	}
	for _, tt := range tests {
		if got := DeliveredAnswer(tt.e, []byte(tt.body)).Tokens(0); got != tt.want {
			t.Errorf("%v %s: %d, want %d", tt.e, tt.body, got, tt.want)
		}
	}
}
