package reqparse

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sekgate/gateway/shared/snapshot"
)

// TestParseRemoteMediaAndExtensions: Parse records the first remote media part and every
// extension with the param naming it (the server refuses them unless a route allows them);
// inline media and look-alikes are not flagged.
func TestParseRemoteMediaAndExtensions(t *testing.T) {
	const u = `"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"x"},`
	ext := func(name, param string) Extension {
		return Extension{Index: snapshot.ExtensionIndex(name), Param: param}
	}
	tests := []struct {
		name     string
		endpoint string
		body     string
		remote   string
		exts     []Extension
	}{
		{"image_url https", chat, `{` + u + `{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]}`, "messages[0].content[1].image_url.url", nil},
		{"image_url http", chat, `{` + u + `{"type":"image_url","image_url":{"url":"http://169.254.169.254/latest/meta-data"}}]}]}`, "messages[0].content[1].image_url.url", nil},
		{"image_url ftp", chat, `{` + u + `{"type":"image_url","image_url":{"url":"ftp://x/a.png"}}]}]}`, "messages[0].content[1].image_url.url", nil},
		{"image_url file", chat, `{` + u + `{"type":"image_url","image_url":{"url":"file:///etc/passwd"}}]}]}`, "messages[0].content[1].image_url.url", nil},
		{"image_url bare path", chat, `{` + u + `{"type":"image_url","image_url":{"url":"/etc/passwd"}}]}]}`, "messages[0].content[1].image_url.url", nil},
		{"image_url string form", chat, `{` + u + `{"type":"input_image","image_url":"https://x/a.png"}]}]}`, "messages[0].content[1].image_url", nil},
		{"image_url without type", chat, `{` + u + `{"image_url":{"url":"https://x/a.png"}}]}]}`, "messages[0].content[1].image_url.url", nil},
		{"image_url escaped scheme", chat, `{` + u + `{"type":"image_url","image_url":{"url":"\u0068ttps://x"}}]}]}`, "messages[0].content[1].image_url.url", nil},
		{"video_url", chat, `{` + u + `{"type":"video_url","video_url":{"url":"https://x/v.mp4"}}]}]}`, "messages[0].content[1].video_url.url", nil},
		{"audio_url", chat, `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"audio_url","audio_url":{"url":"s3://b/a.wav"}}]}]}`, "messages[1].content[0].audio_url.url", nil},
		{"input_audio url", chat, `{` + u + `{"type":"input_audio","input_audio":{"data":"https://x/a.wav","format":"wav"}}]}]}`, "messages[0].content[1].input_audio.data", nil},
		{"input_audio url member", chat, `{` + u + `{"type":"input_audio","input_audio":{"url":"https://x/a.wav"}}]}]}`, "messages[0].content[1].input_audio.url", nil},
		{"file_id", chat, `{` + u + `{"type":"file","file":{"file_id":"file-abc"}}]}]}`, "messages[0].content[1].file.file_id", nil},
		{"file_data url", chat, `{` + u + `{"type":"file","file":{"file_data":"https://x/a.pdf","filename":"a.pdf"}}]}]}`, "messages[0].content[1].file.file_data", nil},
		{"file_url", chat, `{` + u + `{"type":"file","file":{"file_url":"https://x/a.pdf"}}]}]}`, "messages[0].content[1].file.file_url", nil},
		{"first remote part named", chat, `{` + u + `{"type":"image_url","image_url":{"url":"data:image/png;base64,AA"}},{"type":"image_url","image_url":{"url":"https://x/2"}},{"type":"video_url","video_url":{"url":"https://x/3"}}]}]}`, "messages[0].content[2].image_url.url", nil},
		{"embeddings chat-style messages", emb, `{"model":"e","input":"x","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x"}}]}]}`, "messages[0].content[0].image_url.url", nil},

		{"prompt_embeds", compl, `{"model":"m","prompt":"x","prompt_embeds":"UEsDBAAAAAA="}`, "", []Extension{ext("prompt_embeds", "prompt_embeds")}},
		{"prompt_embeds on chat", chat, `{"model":"m","messages":[{"role":"user","content":"x"}],"prompt_embeds":["AA"]}`, "", []Extension{ext("prompt_embeds", "prompt_embeds")}},
		{"escaped prompt_embeds key", compl, `{"model":"m","prompt":"x","prompt\u005fembeds":"AA"}`, "", []Extension{ext("prompt_embeds", "prompt_embeds")}},
		{"chat_template", chat, `{"model":"m","messages":[{"role":"user","content":"x"}],"chat_template":"{{ x }}"}`, "", []Extension{ext("chat_template", "chat_template")}},
		{"chat_template in kwargs", chat, `{"model":"m","messages":[{"role":"user","content":"x"}],"chat_template_kwargs":{"enable_thinking":false,"chat_template":"{{x}}"}}`, "", []Extension{ext("chat_template", "chat_template_kwargs.chat_template")}},
		{"content parts first, then top-level fields", chat, `{"model":"m","messages":[{"role":"user","content":[{"type":"image_embeds","image_embeds":"AA"}]}],"vllm_xargs":{"a":1},"kv_transfer_params":{"remote_host":"10.0.0.1"},"logits_processors":["x.y"]}`, "",
			[]Extension{ext("image_embeds", "messages[0].content[0].image_embeds"), ext("kv_transfer_params", "kv_transfer_params"), ext("logits_processors", "logits_processors"), ext("vllm_xargs", "vllm_xargs")}},
		{"audio_embeds part", chat, `{` + u + `{"type":"audio_embeds","audio_embeds":"AA"}]}]}`, "", []Extension{ext("audio_embeds", "messages[0].content[1].audio_embeds")}},
		{"mm and media kwargs", chat, `{"model":"m","messages":[{"role":"user","content":"x"}],"mm_processor_kwargs":{"num_frames":100000},"media_io_kwargs":{"video":{"num_frames":-1}}}`, "",
			[]Extension{ext("mm_processor_kwargs", "mm_processor_kwargs"), ext("media_io_kwargs", "media_io_kwargs")}},
		{"sglang lora_path and input_embeds", compl, `{"model":"m","prompt":"x","lora_path":"/models/evil","input_embeds":[[0.1]]}`, "",
			[]Extension{ext("lora_path", "lora_path"), ext("input_embeds", "input_embeds")}},
		{"extension on embeddings", emb, `{"model":"e","input":"x","prompt_embeds":"AA"}`, "", []Extension{ext("prompt_embeds", "prompt_embeds")}},
		{"extension on responses", resp, `{"model":"m","input":"x","chat_template":"t"}`, "", []Extension{ext("chat_template", "chat_template")}},
		{"extension on messages", msgs, `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"}],"kv_transfer_params":{}}`, "", []Extension{ext("kv_transfer_params", "kv_transfer_params")}},
		{"extension on systemone", sys1, `{"model":"m","state":"x","questions":{"q":{"type":"noul"}},"logits_processors":[]}`, "", []Extension{ext("logits_processors", "logits_processors")}},
		{"remote media and extension", chat, `{` + u + `{"type":"image_url","image_url":{"url":"https://x"}}]}],"prompt_embeds":"AA"}`, "messages[0].content[1].image_url.url", []Extension{ext("prompt_embeds", "prompt_embeds")}},

		// allowed neighbours: nothing flagged
		{"data url image", chat, `{` + u + `{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}]}`, "", nil},
		{"DATA url upper case", chat, `{` + u + `{"type":"image_url","image_url":{"url":"DATA:image/png;base64,AA"}}]}]}`, "", nil},
		{"data url video and audio", chat, `{` + u + `{"type":"video_url","video_url":{"url":"data:video/mp4;base64,AA"}},{"type":"audio_url","audio_url":"data:audio/wav;base64,AA"}]}]}`, "", nil},
		{"input_audio base64", chat, `{` + u + `{"type":"input_audio","input_audio":{"data":"UklGRiQAAABXQVZFZm10IBAAAAAB+/=","format":"wav"}}]}]}`, "", nil},
		{"file_data base64", chat, `{` + u + `{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBERi0=","filename":"a.pdf"}}]}]}`, "", nil},
		{"url in text", chat, `{` + u + `{"type":"text","text":"see https://example.com"}]}]}`, "", nil},
		{"url as plain content", chat, `{"model":"m","messages":[{"role":"user","content":"https://example.com/a.png"}]}`, "", nil},
		{"null extensions", chat, `{"model":"m","messages":[{"role":"user","content":"x"}],"prompt_embeds":null,"chat_template":null,"chat_template_kwargs":{"enable_thinking":true}}`, "", nil},
		{"null media", chat, `{` + u + `{"type":"image_url","image_url":null}]}]}`, "", nil},
		{"guided decoding is not an extension", chat, `{"model":"m","messages":[{"role":"user","content":"x"}],"guided_json":{"type":"object"},"response_format":{"type":"json_object"}}`, "", nil},
		{"extension names inside values", chat, `{"model":"m","messages":[{"role":"user","content":"x"}],"metadata":{"prompt_embeds":"x","image_url":"https://x"}}`, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Parse(tt.endpoint, []byte(tt.body))
			if err != nil {
				t.Fatalf("Parse: %v (param %q)", err, err.Param)
			}
			if r.RemoteMedia != tt.remote {
				t.Errorf("RemoteMedia %q, want %q", r.RemoteMedia, tt.remote)
			}
			if d := cmp.Diff(tt.exts, r.Extensions); d != "" {
				t.Errorf("extensions (-want +got):\n%s", d)
			}
			var mask uint32
			for _, e := range tt.exts {
				mask |= 1 << e.Index
			}
			if r.ExtensionMask != mask {
				t.Errorf("mask %b, want %b", r.ExtensionMask, mask)
			}
		})
	}
}

// TestParseRemoteMediaRefused: Responses-style parts refuse remote media on every route (the
// interface refuses remote inputs there), as Messages-style URL sources are; duplicates of
// media keys are refused so that no parser reads another URL than the gateway did.
func TestParseRemoteMediaRefused(t *testing.T) {
	const ri = `"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"x"},`
	tests := []struct {
		name, endpoint, body, param string
	}{
		{"responses video_url", resp, `{` + ri + `{"type":"input_video","video_url":{"url":"https://x/v.mp4"}}]}]}`, "input[0].content[1].video_url.url"},
		{"responses audio_url", resp, `{` + ri + `{"audio_url":"https://x/a.wav"}]}]}`, "input[0].content[1].audio_url"},
		{"responses input_audio url", resp, `{` + ri + `{"type":"input_audio","input_audio":{"data":"http://x/a.wav"}}]}]}`, "input[0].content[1].input_audio.data"},
		{"responses image_url object", resp, `{` + ri + `{"type":"image_url","image_url":{"url":"https://x"}}]}]}`, "input[0].content[1].image_url.url"},
		{"responses chat-style file_id", resp, `{` + ri + `{"type":"file","file":{"file_id":"f"}}]}]}`, "input[0].content[1].file.file_id"},
		{"chat duplicate image_url", chat, `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:,x"},"image_url":{"url":"https://x"}}]}]}`, "messages[0].content[0].image_url"},
		{"chat duplicate url", chat, `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:,x","url":"https://x"}}]}]}`, "messages[0].content[0].image_url.url"},
		{"chat duplicate file_id", chat, `{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":null,"file_id":"f"}}]}]}`, "messages[0].content[0].file.file_id"},
		{"duplicate prompt_embeds", compl, `{"model":"m","prompt":"x","prompt_embeds":null,"prompt_embeds":"AA"}`, "prompt_embeds"},
		{"duplicate kwargs chat_template", chat, `{"model":"m","messages":[{"role":"user","content":"x"}],"chat_template_kwargs":{"chat_template":null,"chat_template":"t"}}`, "chat_template_kwargs.chat_template"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.endpoint, []byte(tt.body))
			if err == nil || err.Status != 400 || err.Param != tt.param {
				t.Fatalf("got %v (param %q), want 400 naming %q", err, paramOf(err), tt.param)
			}
		})
	}
}

func TestHasScheme(t *testing.T) {
	for lit, want := range map[string]bool{`"https://x"`: true, `"s3://b/k"`: true, `"file:/etc"`: true, `"C:\\x"`: true,
		`"data:audio/wav;base64,AA"`: false, `"UklGRiQAAAB+/="`: false, `"AAAA"`: false, `":x"`: false, `""`: false, `5`: false, `null`: false} {
		if got := hasScheme(lit); got != want {
			t.Errorf("hasScheme(%s) = %v, want %v", lit, got, want)
		}
	}
}
