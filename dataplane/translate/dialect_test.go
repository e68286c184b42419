package translate

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/dataplane/dialect"
)

// TestThinkingSwitch: a Messages-style thinking setting and a Responses-style effort
// become each server's switch.
func TestThinkingSwitch(t *testing.T) {
	msgs := func(th string) []byte {
		return []byte(`{"model":"m","max_tokens":9,"thinking":` + th + `,"messages":[{"role":"user","content":"hi"}]}`)
	}
	cases := []struct {
		server dialect.Server
		body   []byte
		resp   bool
		path   string
		want   string
	}{
		{dialect.VLLM, msgs(`{"type":"enabled","budget_tokens":1024}`), false, "chat_template_kwargs.enable_thinking", "true"},
		{dialect.SGLang, msgs(`{"type":"disabled"}`), false, "chat_template_kwargs.enable_thinking", "false"},
		{dialect.OpenAI, msgs(`{"type":"enabled","budget_tokens":1024}`), false, "reasoning_effort", `"low"`},
		{dialect.Ollama, msgs(`{"type":"enabled","budget_tokens":20000}`), false, "reasoning_effort", `"high"`},
		{dialect.TGI, msgs(`{"type":"enabled","budget_tokens":1024}`), false, "chat_template_kwargs", ``},
		{dialect.LlamaCpp, []byte(`{"model":"m","reasoning":{"effort":"none"},"input":"hi"}`), true, "chat_template_kwargs.enable_thinking", "false"},
		{dialect.OpenAI, []byte(`{"model":"m","reasoning":{"effort":"medium"},"input":"hi"}`), true, "reasoning_effort", `"medium"`},
	}
	for _, c := range cases {
		fn := MessagesToChatWith
		if c.resp {
			fn = ResponsesToChatWith
		}
		out, err := fn(c.body, "up", Options{Dialect: dialect.For(c.server)})
		if err != nil {
			t.Fatal(err)
		}
		if got := gjson.GetBytes(out, c.path).Raw; got != c.want {
			t.Errorf("%s %s: %s = %q, want %q", c.server, c.body, c.path, got, c.want)
		}
	}
}

// TestReplayedReasoning: thinking blocks and reasoning items of earlier turns go back under
// the member the server reads, or are dropped.
func TestReplayedReasoning(t *testing.T) {
	m := []byte(`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[` +
		`{"type":"thinking","thinking":"because","signature":"s"},{"type":"text","text":"a"}]},{"role":"user","content":"more"}]}`)
	r := []byte(`{"model":"m","input":[{"role":"user","content":"q"},{"type":"reasoning","id":"rs_1","summary":[],` +
		`"content":[{"type":"reasoning_text","text":"because"}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a"}]},` +
		`{"role":"user","content":"more"}]}`)
	for _, c := range []struct {
		server dialect.Server
		member string
	}{{dialect.VLLM, "reasoning"}, {dialect.SGLang, "reasoning_content"}, {dialect.LlamaCpp, "reasoning_content"},
		{dialect.Ollama, "reasoning"}, {dialect.TGI, ""}, {dialect.OpenAI, ""}} {
		for i, fn := range []func([]byte, string, Options) ([]byte, error){MessagesToChatWith, ResponsesToChatWith} {
			out, err := fn([][]byte{m, r}[i], "up", Options{Dialect: dialect.For(c.server)})
			if err != nil {
				t.Fatal(err)
			}
			msgs := gjson.GetBytes(out, "messages")
			a := msgs.Get("1")
			if n := len(msgs.Array()); n != 3 || a.Get("role").Str != "assistant" || a.Get("content").Str != "a" {
				t.Fatalf("%s: %s", c.server, out)
			}
			for _, f := range []string{"reasoning", "reasoning_content"} {
				if want := f == c.member; a.Get(f).Str == "because" != want {
					t.Errorf("%s %d: %s in %s", c.server, i, f, a.Raw)
				}
			}
		}
	}
}

// TestThinkingStreamEvents: a reasoning stream's Messages-style events, in order.
func TestThinkingStreamEvents(t *testing.T) {
	var events []string
	s := NewChatToMessagesStream("m", func(e, d []byte) error {
		typ := gjson.GetBytes(d, "delta.type").Str
		if typ == "" {
			typ = gjson.GetBytes(d, "content_block.type").Str
		}
		events = append(events, strings.TrimSpace(string(e)+" "+typ))
		return nil
	}).Configure(Options{Dialect: dialect.For(dialect.SGLang), Stops: []string{"END"}})
	for _, c := range []string{
		`{"id":"x","choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning_content":null,"tool_calls":null}}],"usage":null}`,
		`{"choices":[{"index":0,"delta":{"content":null,"reasoning_content":"a","tool_calls":null}}],"usage":null}`,
		`{"choices":[{"index":0,"delta":{"content":"b","reasoning_content":null,"tool_calls":null}}],"usage":null}`,
		`{"choices":[{"index":0,"delta":{"content":null,"tool_calls":null},"finish_reason":"stop","matched_stop":"END"}],"usage":null}`,
	} {
		if err := s.Feed([]byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Finish(); err != nil {
		t.Fatal(err)
	}
	want := "message_start|content_block_start thinking|content_block_delta thinking_delta|content_block_delta signature_delta|" +
		"content_block_stop|content_block_start text|content_block_delta text_delta|content_block_stop|message_delta|message_stop"
	if got := strings.Join(events, "|"); got != want {
		t.Errorf("events\n %s\nwant\n %s", got, want)
	}
}
