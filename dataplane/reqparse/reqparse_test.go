package reqparse

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sekgate/gateway/shared/snapshot"
)

const (
	chat  = snapshot.EndpointChat
	compl = snapshot.EndpointCompletions
	emb   = snapshot.EndpointEmbeddings
	resp  = snapshot.EndpointResponses
	msgs  = snapshot.EndpointMessages
	count = EndpointCountTokens
	sys1  = snapshot.EndpointSystemOne
)

func TestParseGood(t *testing.T) {
	tests := []struct {
		name     string
		endpoint string
		body     string
		want     Request
	}{
		{"chat minimal", chat, `{"model":"m","messages":[{"role":"user","content":"hello"}]}`,
			Request{Model: "m", PromptBytes: 5}},
		{"chat full", chat, `{"model":"llama/3","messages":[{"role":"system","content":"be brief"},
			{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]},
			{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"c1","content":"42"}],
			"store":false,"stream":true,"stream_options":{"include_usage":true,"extra":1},"max_tokens":100,
			"n":1,"stop":["a","b"],"temperature":0.5,"top_p":1,"seed":7,"tools":[{"type":"function","function":{"name":"f"}}],
			"tool_choice":"auto","response_format":{"type":"json_object"},"extra_field":{"x":[1,2]}}`,
			Request{Model: "llama/3", Stream: true, IncludeUsage: true, MaxTokens: 100, Choices: 1, PromptBytes: 8 + 2 + 2}},
		{"chat n", chat, `{"model":"m","messages":[{"role":"user"}],"n":3}`, Request{Model: "m", Choices: 3}},
		{"chat nulls are absent", chat, `{"model":"m","messages":[{"role":"user","content":"x"}],"store":null,"stream":null,
			"stream_options":null,"max_tokens":null,"stop":null,"temperature":null,"seed":null,"tools":null,"n":null}`,
			Request{Model: "m", PromptBytes: 1}},
		{"chat the smaller of max_tokens and max_completion_tokens", chat, `{"model":"m","messages":[{"role":"user"}],"max_tokens":5,"max_completion_tokens":9}`,
			Request{Model: "m", MaxTokens: 5, LengthFields: true}},
		{"chat max_completion_tokens smaller", chat, `{"model":"m","messages":[{"role":"user"}],"max_tokens":9,"max_completion_tokens":5}`,
			Request{Model: "m", MaxTokens: 5, LengthFields: true}},
		{"chat integer as 1.0 and escaped text", chat, `{"model":"m","messages":[{"role":"user","content":"\u00e5\n\ud83d\ude00"}],"max_tokens":1.0}`,
			Request{Model: "m", MaxTokens: 1, PromptBytes: 2 + 1 + 4}},
		{"chat stop string", chat, `{"model":"m","messages":[{"role":"user","content":""}],"stop":"\n"}`, Request{Model: "m"}},
		{"escaped model key", chat, `{"mod\u0065l":"m\u002fx","messages":[{"role":"user"}]}`, Request{Model: "m/x"}},
		{"leading whitespace", chat, " \n{\"model\":\"m\",\"messages\":[{\"role\":\"user\"}]}\n", Request{Model: "m"}},

		{"completions", compl, `{"model":"m","prompt":"once upon","n":1,"best_of":1,"echo":false,"suffix":"end",
			"logprobs":5,"store":false,"stream":true,"stream_options":{"include_usage":false},"temperature":1,"top_p":0.9,
			"stop":"x","seed":1,"max_tokens":16}`,
			Request{Model: "m", Stream: true, MaxTokens: 16, PromptBytes: 9}},
		{"completions logprobs 0", compl, `{"model":"m","prompt":"","logprobs":0}`, Request{Model: "m"}},

		{"embeddings string", emb, `{"model":"e","input":"hello world","encoding_format":"base64","dimensions":256,"user":"u","stream":false}`,
			Request{Model: "e", InputCount: 1, PromptBytes: 11}},
		{"embeddings array", emb, `{"model":"e","input":["a","bbb","cc"],"encoding_format":"float"}`,
			Request{Model: "e", InputCount: 3, PromptBytes: 3}},
		{"embeddings 128", emb, `{"model":"e","input":[` + strings.Repeat(`"x",`, 127) + `"x"]}`,
			Request{Model: "e", InputCount: 128, PromptBytes: 1}},

		{"responses string", resp, `{"model":"m","input":"hi","instructions":"be kind","max_output_tokens":50,"stream":true,
			"store":false,"background":false,"previous_response_id":null,"conversation":null,
			"tools":[{"type":"function","name":"get","description":"d","parameters":{"type":"object"}}]}`,
			Request{Model: "m", Stream: true, MaxTokens: 50, PromptBytes: 2 + 7}},
		{"responses items", resp, `{"model":"m","input":[
			{"role":"user","content":"plain"},
			{"type":"message","role":"user","content":[{"type":"input_text","text":"look"},
				{"type":"input_image","image_url":"DATA:image/png;base64,AAAA"},{"type":"input_file","file_data":"data:application/pdf;base64,AA","filename":"a.pdf"}]},
			{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},
			{"type":"function_call_output","call_id":"c","output":"result"},
			{"type":"reasoning","summary":[]}]}`,
			Request{Model: "m", PromptBytes: 5 + 4 + 6}},

		{"messages", msgs, `{"model":"claude-ish","max_tokens":1024,"system":[{"type":"text","text":"sys","cache_control":{"type":"ephemeral"}}],
			"messages":[{"role":"user","content":"hello"},
			{"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"t1","name":"f","input":{"a":1}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"res"},
				{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]},
				{"type":"document","source":{"type":"text","media_type":"text/plain","data":"doc text"}}]}],
			"stream":true,"tools":[{"name":"f","description":"d","input_schema":{"type":"object"}},{"type":"custom","name":"g","input_schema":{}},
			{"type":null,"name":"h","input_schema":{}}],"temperature":0.2,"stop_sequences":["END"],"mcp_servers":[]}`,
			Request{Model: "claude-ish", Stream: true, MaxTokens: 1024, PromptBytes: 3 + 5 + 2 + 3 + 8}},
		{"messages system string", msgs, `{"model":"m","max_tokens":1,"system":"abc","messages":[{"role":"user","content":"x"}]}`,
			Request{Model: "m", MaxTokens: 1, PromptBytes: 4}},

		{"count_tokens", count, `{"model":"m","messages":[{"role":"user","content":"hey"}],"system":"s","tools":[{"name":"f","input_schema":{}}],"stream":false}`,
			Request{Model: "m", PromptBytes: 4}},

		{"systemone", sys1, `{"model":"s1","state":"the text","questions":{"q1":{"type":"choice","choices":["a","b"]},"q2":{"type":"noul"},"q3":{"type":"score","scale":5}}}`,
			Request{Model: "s1", InputCount: 3, PromptBytes: 8}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.endpoint, []byte(tt.body))
			if err != nil {
				t.Fatalf("Parse: %v (param %q)", err, err.Param)
			}
			tt.want.Endpoint = tt.endpoint
			// Where the prompt's stable start lies is checked in prefix_test.go.
			got.Prefix, got.CacheKey = Span{}, Span{}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Fatalf("request (-want +got):\n%s", d)
			}
		})
	}
}

func TestParseBad(t *testing.T) {
	const m = `"model":"m",`
	const cm = `"model":"m","messages":[{"role":"user","content":"x"}],`
	const rm = `"model":"m","input":"x",`
	const am = `"model":"m","max_tokens":10,"messages":[{"role":"user","content":"x"}],`
	tests := []struct {
		name     string
		endpoint string
		body     string
		param    string
		status   int // 0 means 400
	}{
		// common
		{"empty body", chat, ``, "", 0},
		{"not json", chat, `{"model":`, "", 0},
		{"trailing garbage", chat, `{"model":"m"} x`, "", 0},
		{"array body", chat, `[1]`, "", 0},
		{"string body", emb, `"x"`, "", 0},
		{"null body", resp, `null`, "", 0},
		{"too deep", chat, strings.Repeat("[", 200) + strings.Repeat("]", 200), "", 0},
		{"too deep object", chat, `{"model":"m","x":` + strings.Repeat(`{"a":`, 200) + `1` + strings.Repeat("}", 200) + `}`, "", 0},
		{"missing model", chat, `{"messages":[{"role":"user"}]}`, "model", 0},
		{"empty model", chat, `{"model":"","messages":[{"role":"user"}]}`, "model", 0},
		{"model number", emb, `{"model":1,"input":"x"}`, "model", 0},
		{"model null", compl, `{"model":null,"prompt":"x"}`, "model", 0},
		{"duplicate model", chat, `{"model":"cheap","messages":[{"role":"user"}],"model":"dear"}`, "model", 0},
		{"duplicate stream", chat, `{` + cm + `"stream":false,"stream":true}`, "stream", 0},
		{"duplicate escaped key", chat, `{` + cm + `"stream":false,"str\u0065am":true}`, "stream", 0},
		{"unknown endpoint", "/v1/nope", `{"model":"m"}`, "", 404},
		{"too large", chat, `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 8<<20) + `"}]}`, "", 413},
		{"systemone too large", sys1, `{"model":"m","state":"` + strings.Repeat("x", 128<<10) + `","questions":{"q":{"type":"noul"}}}`, "", 413},

		// chat
		{"chat no messages", chat, `{` + m + `"stream":true}`, "messages", 0},
		{"chat messages object", chat, `{` + m + `"messages":{"role":"user"}}`, "messages", 0},
		{"chat messages empty", chat, `{` + m + `"messages":[]}`, "messages", 0},
		{"chat message not object", chat, `{` + m + `"messages":["hi"]}`, "messages[0]", 0},
		{"chat role missing", chat, `{` + m + `"messages":[{"role":"user"},{"content":"x"}]}`, "messages[1].role", 0},
		{"chat role number", chat, `{` + m + `"messages":[{"role":1}]}`, "messages[0].role", 0},
		{"chat content number", chat, `{` + m + `"messages":[{"role":"user","content":5}]}`, "messages[0].content", 0},
		{"chat content part string", chat, `{` + m + `"messages":[{"role":"user","content":["x"]}]}`, "messages[0].content[0]", 0},
		{"chat tool_calls object", chat, `{` + m + `"messages":[{"role":"assistant","tool_calls":{}}]}`, "messages[0].tool_calls", 0},
		{"chat tool_call_id number", chat, `{` + m + `"messages":[{"role":"tool","tool_call_id":3}]}`, "messages[0].tool_call_id", 0},
		{"chat store true", chat, `{` + cm + `"store":true}`, "store", 0},
		{"chat store string", chat, `{` + cm + `"store":"no"}`, "store", 0},
		{"chat stream string", chat, `{` + cm + `"stream":"true"}`, "stream", 0},
		{"chat stream_options array", chat, `{` + cm + `"stream_options":[]}`, "stream_options", 0},
		{"chat include_usage string", chat, `{` + cm + `"stream_options":{"include_usage":"yes"}}`, "stream_options.include_usage", 0},
		{"chat max_tokens 0", chat, `{` + cm + `"max_tokens":0}`, "max_tokens", 0},
		{"chat max_tokens negative", chat, `{` + cm + `"max_tokens":-5}`, "max_tokens", 0},
		{"chat max_tokens fraction", chat, `{` + cm + `"max_tokens":1.5}`, "max_tokens", 0},
		{"chat max_tokens string", chat, `{` + cm + `"max_tokens":"10"}`, "max_tokens", 0},
		{"chat max_completion_tokens 0", chat, `{` + cm + `"max_completion_tokens":0}`, "max_completion_tokens", 0},
		{"chat n 0", chat, `{` + cm + `"n":0}`, "n", 0},
		{"chat stop number", chat, `{` + cm + `"stop":1}`, "stop", 0},
		{"chat stop array of numbers", chat, `{` + cm + `"stop":["a",1]}`, "stop", 0},
		{"chat temperature string", chat, `{` + cm + `"temperature":"hot"}`, "temperature", 0},
		{"chat top_p bool", chat, `{` + cm + `"top_p":true}`, "top_p", 0},
		{"chat seed fraction", chat, `{` + cm + `"seed":1.5}`, "seed", 0},
		{"chat tools object", chat, `{` + cm + `"tools":{}}`, "tools", 0},
		{"chat tools item string", chat, `{` + cm + `"tools":["f"]}`, "tools[0]", 0},
		{"chat response_format string", chat, `{` + cm + `"response_format":"json"}`, "response_format", 0},

		// completions
		{"completions no prompt", compl, `{` + m + `"max_tokens":5}`, "prompt", 0},
		{"completions prompt array", compl, `{` + m + `"prompt":["a"]}`, "prompt", 0},
		{"completions token ids", compl, `{` + m + `"prompt":[1,2,3]}`, "prompt", 0},
		{"completions prompt number", compl, `{` + m + `"prompt":5}`, "prompt", 0},
		{"completions n 2", compl, `{` + m + `"prompt":"x","n":2}`, "n", 0},
		{"completions n string", compl, `{` + m + `"prompt":"x","n":"1"}`, "n", 0},
		{"completions best_of 3", compl, `{` + m + `"prompt":"x","best_of":3}`, "best_of", 0},
		{"completions echo string", compl, `{` + m + `"prompt":"x","echo":"no"}`, "echo", 0},
		{"completions suffix number", compl, `{` + m + `"prompt":"x","suffix":1}`, "suffix", 0},
		{"completions logprobs 6", compl, `{` + m + `"prompt":"x","logprobs":6}`, "logprobs", 0},
		{"completions logprobs -1", compl, `{` + m + `"prompt":"x","logprobs":-1}`, "logprobs", 0},
		{"completions logprobs bool", compl, `{` + m + `"prompt":"x","logprobs":true}`, "logprobs", 0},
		{"completions store true", compl, `{` + m + `"prompt":"x","store":true}`, "store", 0},
		{"completions stream number", compl, `{` + m + `"prompt":"x","stream":1}`, "stream", 0},
		{"completions include_usage", compl, `{` + m + `"prompt":"x","stream_options":{"include_usage":1}}`, "stream_options.include_usage", 0},
		{"completions max_tokens 0", compl, `{` + m + `"prompt":"x","max_tokens":0}`, "max_tokens", 0},
		{"completions stop object", compl, `{` + m + `"prompt":"x","stop":{}}`, "stop", 0},
		{"completions temperature", compl, `{` + m + `"prompt":"x","temperature":[]}`, "temperature", 0},
		{"completions seed", compl, `{` + m + `"prompt":"x","seed":"1"}`, "seed", 0},

		// embeddings
		{"embeddings no input", emb, `{` + m + `"dimensions":3}`, "input", 0},
		{"embeddings empty string", emb, `{` + m + `"input":""}`, "input", 0},
		{"embeddings empty array", emb, `{` + m + `"input":[]}`, "input", 0},
		{"embeddings empty item", emb, `{` + m + `"input":["a",""]}`, "input[1]", 0},
		{"embeddings token array", emb, `{` + m + `"input":[1,2,3]}`, "input[0]", 0},
		{"embeddings nested token arrays", emb, `{` + m + `"input":[[1,2],[3]]}`, "input[0]", 0},
		{"embeddings object", emb, `{` + m + `"input":{"text":"x"}}`, "input", 0},
		{"embeddings 129", emb, `{` + m + `"input":[` + strings.Repeat(`"x",`, 128) + `"x"]}`, "input", 0},
		{"embeddings encoding", emb, `{` + m + `"input":"x","encoding_format":"int8"}`, "encoding_format", 0},
		{"embeddings dimensions 0", emb, `{` + m + `"input":"x","dimensions":0}`, "dimensions", 0},
		{"embeddings dimensions string", emb, `{` + m + `"input":"x","dimensions":"256"}`, "dimensions", 0},
		{"embeddings user number", emb, `{` + m + `"input":"x","user":5}`, "user", 0},
		{"embeddings stream", emb, `{` + m + `"input":"x","stream":true}`, "stream", 0},

		// responses
		{"responses no input", resp, `{` + m + `"instructions":"x"}`, "input", 0},
		{"responses input number", resp, `{` + m + `"input":1}`, "input", 0},
		{"responses input empty", resp, `{` + m + `"input":[]}`, "input", 0},
		{"responses item string", resp, `{` + m + `"input":["hi"]}`, "input[0]", 0},
		{"responses item_reference", resp, `{` + m + `"input":[{"type":"item_reference","id":"msg_1"}]}`, "input[0].type", 0},
		{"responses item type number", resp, `{` + m + `"input":[{"type":1}]}`, "input[0].type", 0},
		{"responses role number", resp, `{` + m + `"input":[{"role":1,"content":"x"}]}`, "input[0].role", 0},
		{"responses image url", resp, `{` + m + `"input":[{"role":"user","content":[{"type":"input_image","image_url":"https://example.com/a.png"}]}]}`, "input[0].content[0].image_url", 0},
		{"responses image http", resp, `{` + m + `"input":[{"role":"user","content":[{"type":"input_text","text":"x"},{"type":"input_image","image_url":"http://x/a.png"}]}]}`, "input[0].content[1].image_url", 0},
		{"responses image file_id", resp, `{` + m + `"input":[{"role":"user","content":[{"type":"input_image","file_id":"file-1"}]}]}`, "input[0].content[0].file_id", 0},
		{"responses file_id", resp, `{` + m + `"input":[{"role":"user","content":[{"type":"input_file","file_id":"file-1"}]}]}`, "input[0].content[0].file_id", 0},
		{"responses file_url", resp, `{` + m + `"input":[{"role":"user","content":[{"type":"input_file","file_url":"https://x/a.pdf"}]}]}`, "input[0].content[0].file_url", 0},
		{"responses tool output image url", resp, `{` + m + `"input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","image_url":"https://x"}]}]}`, "input[0].output[0].image_url", 0},
		{"responses part not object", resp, `{` + m + `"input":[{"role":"user","content":[1]}]}`, "input[0].content[0]", 0},
		{"responses instructions number", resp, `{` + rm + `"instructions":1}`, "instructions", 0},
		{"responses max_output_tokens 0", resp, `{` + rm + `"max_output_tokens":0}`, "max_output_tokens", 0},
		{"responses stream string", resp, `{` + rm + `"stream":"yes"}`, "stream", 0},
		{"responses store true", resp, `{` + rm + `"store":true}`, "store", 0},
		{"responses background", resp, `{` + rm + `"background":true}`, "background", 0},
		{"responses previous_response_id", resp, `{` + rm + `"previous_response_id":"resp_1"}`, "previous_response_id", 0},
		{"responses conversation", resp, `{` + rm + `"conversation":"conv_1"}`, "conversation", 0},
		{"responses conversation object", resp, `{` + rm + `"conversation":{"id":"conv_1"}}`, "conversation", 0},
		{"responses prompt", resp, `{` + rm + `"prompt":{"id":"pmpt_1"}}`, "prompt", 0},
		{"responses tools object", resp, `{` + rm + `"tools":{}}`, "tools", 0},
		{"responses web_search", resp, `{` + rm + `"tools":[{"type":"function","name":"f"},{"type":"web_search"}]}`, "tools[1].type", 0},
		{"responses file_search", resp, `{` + rm + `"tools":[{"type":"file_search","vector_store_ids":["v"]}]}`, "tools[0].type", 0},
		{"responses code_interpreter", resp, `{` + rm + `"tools":[{"type":"code_interpreter"}]}`, "tools[0].type", 0},
		{"responses computer_use", resp, `{` + rm + `"tools":[{"type":"computer_use_preview"}]}`, "tools[0].type", 0},
		{"responses tool no type", resp, `{` + rm + `"tools":[{"name":"f"}]}`, "tools[0].type", 0},
		{"responses tool no name", resp, `{` + rm + `"tools":[{"type":"function"}]}`, "tools[0].name", 0},
		{"responses tool empty name", resp, `{` + rm + `"tools":[{"type":"function","name":""}]}`, "tools[0].name", 0},
		{"responses temperature", resp, `{` + rm + `"temperature":"x"}`, "temperature", 0},

		// messages
		{"messages no messages", msgs, `{` + m + `"max_tokens":5}`, "messages", 0},
		{"messages empty", msgs, `{` + m + `"max_tokens":5,"messages":[]}`, "messages", 0},
		{"messages string", msgs, `{` + m + `"max_tokens":5,"messages":"hi"}`, "messages", 0},
		{"messages no role", msgs, `{` + m + `"max_tokens":5,"messages":[{"content":"x"}]}`, "messages[0].role", 0},
		{"messages content number", msgs, `{` + m + `"max_tokens":5,"messages":[{"role":"user","content":1}]}`, "messages[0].content", 0},
		{"messages block string", msgs, `{` + m + `"max_tokens":5,"messages":[{"role":"user","content":["x"]}]}`, "messages[0].content[0]", 0},
		{"messages no max_tokens", msgs, `{` + m + `"messages":[{"role":"user","content":"x"}]}`, "max_tokens", 0},
		{"messages max_tokens null", msgs, `{` + m + `"max_tokens":null,"messages":[{"role":"user","content":"x"}]}`, "max_tokens", 0},
		{"messages max_tokens 0", msgs, `{` + m + `"max_tokens":0,"messages":[{"role":"user","content":"x"}]}`, "max_tokens", 0},
		{"messages max_tokens string", msgs, `{` + m + `"max_tokens":"5","messages":[{"role":"user","content":"x"}]}`, "max_tokens", 0},
		{"messages system number", msgs, `{` + am + `"system":5}`, "system", 0},
		{"messages system block image", msgs, `{` + am + `"system":[{"type":"image","source":{}}]}`, "system[0]", 0},
		{"messages system block no text", msgs, `{` + am + `"system":[{"type":"text"}]}`, "system[0]", 0},
		{"messages system item string", msgs, `{` + am + `"system":["x"]}`, "system[0]", 0},
		{"messages stream string", msgs, `{` + am + `"stream":"true"}`, "stream", 0},
		{"messages tools object", msgs, `{` + am + `"tools":{}}`, "tools", 0},
		{"messages tool no name", msgs, `{` + am + `"tools":[{"input_schema":{}}]}`, "tools[0].name", 0},
		{"messages tool no schema", msgs, `{` + am + `"tools":[{"name":"f"}]}`, "tools[0].input_schema", 0},
		{"messages tool schema string", msgs, `{` + am + `"tools":[{"name":"f","input_schema":"{}"}]}`, "tools[0].input_schema", 0},
		{"messages web_search", msgs, `{` + am + `"tools":[{"type":"web_search_20250305","name":"web_search"}]}`, "tools[0].type", 0},
		{"messages bash", msgs, `{` + am + `"tools":[{"name":"f","input_schema":{}},{"type":"bash_20250124","name":"bash"}]}`, "tools[1].type", 0},
		{"messages text_editor", msgs, `{` + am + `"tools":[{"type":"text_editor_20250728","name":"str_replace_based_edit_tool"}]}`, "tools[0].type", 0},
		{"messages computer", msgs, `{` + am + `"tools":[{"type":"computer_20250124","name":"computer","display_width_px":1}]}`, "tools[0].type", 0},
		{"messages tool type smuggled", msgs, `{` + am + `"tools":[{"type":"custom","name":"f","input_schema":{},"type":"web_search_20250305"}]}`, "tools[0].type", 0},
		{"messages image url", msgs, `{` + m + `"max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://x/a.png"}}]}]}`, "messages[0].content[0].source.type", 0},
		{"messages document url", msgs, `{` + m + `"max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"x"},{"type":"document","source":{"type":"url","url":"https://x/a.pdf"}}]}]}`, "messages[0].content[1].source.type", 0},
		{"messages file source", msgs, `{` + m + `"max_tokens":5,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"file","file_id":"f"}}]}]}`, "messages[0].content[0].source.type", 0},
		{"messages url in tool_result", msgs, `{` + m + `"max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"image","source":{"type":"url","url":"https://x"}}]}]}]}`, "messages[0].content[0].content[0].source.type", 0},
		{"messages temperature", msgs, `{` + am + `"temperature":"1"}`, "temperature", 0},
		{"messages stop_sequences string", msgs, `{` + am + `"stop_sequences":"END"}`, "stop_sequences", 0},
		{"messages mcp_servers", msgs, `{` + am + `"mcp_servers":[{"type":"url","url":"https://x","name":"x"}]}`, "mcp_servers", 0},

		// count_tokens
		{"count no messages", count, `{` + m + `"system":"x"}`, "messages", 0},
		{"count no model", count, `{"messages":[{"role":"user","content":"x"}]}`, "model", 0},
		{"count stream true", count, `{` + m + `"messages":[{"role":"user","content":"x"}],"stream":true}`, "stream", 0},
		{"count system number", count, `{` + m + `"messages":[{"role":"user","content":"x"}],"system":1}`, "system", 0},
		{"count tools string", count, `{` + m + `"messages":[{"role":"user","content":"x"}],"tools":"x"}`, "tools", 0},
		{"count hosted tool", count, `{` + m + `"messages":[{"role":"user","content":"x"}],"tools":[{"type":"web_search_20250305","name":"w"}]}`, "tools[0].type", 0},

		// systemone
		{"systemone no state", sys1, `{` + m + `"questions":{"q":{"type":"noul"}}}`, "state", 0},
		{"systemone state number", sys1, `{` + m + `"state":1,"questions":{"q":{"type":"noul"}}}`, "state", 0},
		{"systemone no questions", sys1, `{` + m + `"state":"x"}`, "questions", 0},
		{"systemone questions array", sys1, `{` + m + `"state":"x","questions":[{"type":"noul"}]}`, "questions", 0},
		{"systemone questions empty", sys1, `{` + m + `"state":"x","questions":{}}`, "questions", 0},
		{"systemone question string", sys1, `{` + m + `"state":"x","questions":{"q1":"noul"}}`, "questions.q1", 0},
		{"systemone no type", sys1, `{` + m + `"state":"x","questions":{"ok":{"type":"noul"},"q2":{}}}`, "questions.q2", 0},
		{"systemone bad type", sys1, `{` + m + `"state":"x","questions":{"q1":{"type":"yesno"}}}`, "questions.q1", 0},
		{"systemone choice no choices", sys1, `{` + m + `"state":"x","questions":{"pick":{"type":"choice"}}}`, "questions.pick", 0},
		{"systemone choice empty", sys1, `{` + m + `"state":"x","questions":{"pick":{"type":"choice","choices":[]}}}`, "questions.pick", 0},
		{"systemone choice blank", sys1, `{` + m + `"state":"x","questions":{"pick":{"type":"choice","choices":[ ]}}}`, "questions.pick", 0},
		{"systemone choice numbers", sys1, `{` + m + `"state":"x","questions":{"pick":{"type":"choice","choices":["a",2]}}}`, "questions.pick", 0},
		{"systemone choices string", sys1, `{` + m + `"state":"x","questions":{"pick":{"type":"choice","choices":"a,b"}}}`, "questions.pick", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.endpoint, []byte(tt.body))
			if err == nil {
				t.Fatal("Parse accepted the body")
			}
			want := tt.status
			if want == 0 {
				want = 400
			}
			if err.Status != want {
				t.Fatalf("status %d, want %d (%v)", err.Status, want, err)
			}
			if err.Param != tt.param {
				t.Fatalf("param %q, want %q (%v)", err.Param, tt.param, err)
			}
			if want == 400 && err.Type != "invalid_request_error" {
				t.Fatalf("type %q", err.Type)
			}
			if err.Message == "" {
				t.Fatal("empty message")
			}
		})
	}
}

func TestParseDoesNotRetainBody(t *testing.T) {
	body := []byte(`{"model":"abc","messages":[{"role":"user"}]}`)
	r, err := Parse(chat, body)
	if err != nil {
		t.Fatal(err)
	}
	copy(body, bytes.Repeat([]byte("x"), len(body)))
	if r.Model != "abc" {
		t.Fatalf("model changed with the body: %q", r.Model)
	}
}

func TestMaxBodyBytes(t *testing.T) {
	for ep, want := range map[string]int{chat: 8 << 20, compl: 8 << 20, emb: 8 << 20, resp: 8 << 20,
		msgs: 8 << 20, count: 8 << 20, sys1: 128 << 10} {
		if got := MaxBodyBytes(ep); got != want {
			t.Errorf("MaxBodyBytes(%s) = %d, want %d", ep, got, want)
		}
	}
	// exactly at the limit is accepted (as far as size goes)
	body := `{"model":"m","state":"` + strings.Repeat("x", 128<<10-200) + `","questions":{"q":{"type":"noul"}}}`
	body += strings.Repeat(" ", 128<<10-len(body))
	if _, err := Parse(sys1, []byte(body)); err != nil {
		t.Fatalf("body of exactly the limit refused: %v", err)
	}
}

func TestCheckContext(t *testing.T) {
	tests := []struct {
		name  string
		req   Request
		ctx   int64
		param string // "" means accepted
	}{
		{"unknown window", Request{Endpoint: chat, MaxTokens: 1 << 40, PromptBytes: 1 << 40}, 0, ""},
		{"fits", Request{Endpoint: chat, MaxTokens: 100, PromptBytes: 500}, 4096, ""},
		{"max_tokens equal to window", Request{Endpoint: chat, MaxTokens: 4096}, 4096, "max_tokens"},
		{"max_tokens over window", Request{Endpoint: msgs, MaxTokens: 5000}, 4096, "max_tokens"},
		{"max_output_tokens", Request{Endpoint: resp, MaxTokens: 4096}, 4096, "max_output_tokens"},
		{"prompt plus output exactly fits", Request{Endpoint: chat, MaxTokens: 96, PromptBytes: 4000 * PromptBytesPerToken}, 4096, ""},
		{"prompt plus output over", Request{Endpoint: chat, MaxTokens: 97, PromptBytes: 4000 * PromptBytesPerToken}, 4096, "messages"},
		{"prompt alone over", Request{Endpoint: compl, PromptBytes: 5000 * PromptBytesPerToken}, 4096, "prompt"},
		{"embedding input over", Request{Endpoint: emb, PromptBytes: 600 * PromptBytesPerToken}, 512, "input"},
		{"huge max_tokens no overflow", Request{Endpoint: chat, MaxTokens: 1<<63 - 1, PromptBytes: 1 << 62}, 1 << 62, "max_tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckContext(tt.req, tt.ctx)
			if tt.param == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || err.Status != 400 || err.Param != tt.param {
				t.Fatalf("got %v (param %q), want 400 naming %q", err, paramOf(err), tt.param)
			}
		})
	}
}

func paramOf(e interface{ Error() string }) string {
	if e == nil {
		return ""
	}
	return e.Error()
}

func TestTextLen(t *testing.T) {
	for lit, want := range map[string]int64{
		`""`:                   0,
		`"abc"`:                3,
		`"a\nb"`:               3,
		`"\u00e5"`:             2,
		`"\u4e2d\u6587"`:       6,
		`"\ud83d\ude00"`:       4,
		`"x\\y"`:               3,
		`"\"q\""`:              3,
		"\"\u00e5\u4e2d\"":     5,
		`"\u0041\u00e5\u4e2d"`: 6,
	} {
		if got := textLen(lit); got != want {
			t.Errorf("textLen(%s) = %d, want %d", lit, got, want)
		}
	}
}

func TestAsInt(t *testing.T) {
	for lit, want := range map[string]int64{"0": 0, "12": 12, "-3": -3, "1.0": 1, "2e3": 2000,
		"9223372036854775807": 1<<63 - 1, "-9223372036854775808": -1 << 63, "9.2e18": 9200000000000000000,
		"-9.2e18": -9200000000000000000, "1e18": 1e18} {
		got, ok := asInt(lit)
		if !ok || got != want {
			t.Errorf("asInt(%s) = %d, %v; want %d", lit, got, ok, want)
		}
	}
	for _, lit := range []string{"1.5", "-0.1", `"1"`, "true", "null", "[]", "",
		"9223372036854775808", "-9223372036854775809", "18446744073709551616", "99999999999999999999",
		"1e400", "-1e400", "1e19", "-1e19", "9.3e18"} {
		if _, ok := asInt(lit); ok {
			t.Errorf("asInt(%s) accepted", lit)
		}
	}
}

// LengthFields marks the bodies proxy.BoundLengths must look at: only a top-level length
// field besides max_tokens and max_output_tokens (a long prompt mentioning one is not).
func TestLengthFields(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"say \"n_predict\": 5"}]`
	for _, tc := range []struct {
		endpoint, body string
		want           bool
	}{
		{snapshot.EndpointChat, `{"model":"m",` + msgs + `,"max_tokens":5}`, false},
		{snapshot.EndpointChat, `{"model":"m",` + msgs + `,"max_completion_tokens":5}`, true},
		{snapshot.EndpointChat, `{"model":"m",` + msgs + `,"n_predict":-1}`, true},
		{snapshot.EndpointChat, `{"model":"m",` + msgs + `,"options":{"num_predict":9}}`, true},
		{snapshot.EndpointCompletions, `{"model":"m","prompt":"x","max_new_tokens":9}`, true},
		{snapshot.EndpointCompletions, `{"model":"m","prompt":"x","parameters":{"max_new_tokens":9}}`, true},
		{snapshot.EndpointResponses, `{"model":"m","input":"x","max_output_tokens":9}`, false},
		{snapshot.EndpointMessages, `{"model":"m","max_tokens":9,` + msgs + `}`, false},
	} {
		r, err := Parse(tc.endpoint, []byte(tc.body))
		if err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		if r.LengthFields != tc.want {
			t.Errorf("%s: LengthFields %v, want %v", tc.body, r.LengthFields, tc.want)
		}
	}
}
