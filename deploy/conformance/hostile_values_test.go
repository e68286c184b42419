package conformance

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// hostileCase is one body the gateway must refuse with 400 naming param ("" for faults of
// the whole body, whose param is null).
type hostileCase struct {
	name, path, body, param string
}

// hostileValues is the corpus of request values that must never reach a model server:
// wrong types, numbers that are not finite or out of range, text that is not valid
// Unicode, duplicate keys, deep nesting, remote media and provider extensions on routes
// that do not opt in — for every public endpoint that takes a body.
func hostileValues() []hostileCase {
	const (
		chatPath = "/v1/chat/completions"
		complete = "/v1/completions"
		embed    = "/v1/embeddings"
		resp     = "/v1/responses"
		msgs     = "/v1/messages"
		count    = "/v1/messages/count_tokens"
		s1       = "/v1/systemone"
	)
	chat := `"model":"` + modelChat + `","messages":[{"role":"user","content":"Hej"}],`
	chatTr := `"model":"` + modelTranslated + `","max_tokens":8,"messages":[{"role":"user","content":"Hej"}],`
	cmpl := `"model":"` + modelChat + `","prompt":"Hej",`
	emb := `"model":"` + modelEmbed + `","input":"Hej",`
	rsp := `"model":"` + modelChat + `","input":"Hej",`
	msg := `"model":"` + modelChat + `","max_tokens":8,"messages":[{"role":"user","content":"Hej"}],`
	cnt := `"model":"` + modelChat + `","messages":[{"role":"user","content":"Hej"}],`
	sys := `"model":"` + modelSystemOne + `","state":"Hej","questions":{"q":{"type":"noul"}},`
	part := func(p string) string {
		return `{"model":"` + modelChat + `","messages":[{"role":"user","content":[{"type":"text","text":"what is this?"},` + p + `]}]}`
	}
	deep := strings.Repeat("[", 300) + strings.Repeat("]", 300)
	return []hostileCase{
		// wrong types
		{"chat model number", chatPath, `{"model":1,"messages":[{"role":"user","content":"x"}]}`, "model"},
		{"chat messages string", chatPath, `{"model":"` + modelChat + `","messages":"Hej"}`, "messages"},
		{"chat max_tokens string", chatPath, `{` + chat + `"max_tokens":"5"}`, "max_tokens"},
		{"completions prompt tokens", complete, `{"model":"` + modelChat + `","prompt":[1,2,3]}`, "prompt"},
		{"embeddings input object", embed, `{"model":"` + modelEmbed + `","input":{"text":"x"}}`, "input"},
		{"responses stream string", resp, `{` + rsp + `"stream":"yes"}`, "stream"},
		{"messages system number", msgs, `{` + msg + `"system":5}`, "system"},
		{"systemone state array", s1, `{"model":"` + modelSystemOne + `","state":["x"],"questions":{"q":{"type":"noul"}}}`, "state"},

		// numbers: not finite, NaN, out of range
		{"chat temperature 1e999", chatPath, `{` + chat + `"temperature":1e999}`, "temperature"},
		{"chat seed 1e999", chatPath, `{` + chat + `"seed":1e999}`, "seed"},
		{"chat seed 2^64", chatPath, `{` + chat + `"seed":18446744073709551616}`, "seed"},
		{"chat max_tokens 2^63", chatPath, `{` + chat + `"max_tokens":9223372036854775808}`, "max_tokens"},
		{"chat n huge", chatPath, `{` + chat + `"n":1000000}`, "n"},
		{"chat temperature negative", chatPath, `{` + chat + `"temperature":-1}`, "temperature"},
		{"chat unknown field 1e999", chatPath, `{` + chat + `"repetition_penalty":1e999}`, "repetition_penalty"},
		{"chat NaN", chatPath, `{` + chat + `"temperature":NaN}`, ""},
		{"chat Infinity", chatPath, `{` + chat + `"top_p":Infinity}`, ""},
		{"completions seed -2^63-1", complete, `{` + cmpl + `"seed":-9223372036854775809}`, "seed"},
		{"completions max_tokens 1e999", complete, `{` + cmpl + `"max_tokens":1e999}`, "max_tokens"},
		{"embeddings dimensions 1e999", embed, `{` + emb + `"dimensions":1e999}`, "dimensions"},
		{"embeddings dimensions 2^64", embed, `{` + emb + `"dimensions":18446744073709551616}`, "dimensions"},
		{"responses max_output_tokens 2^31", resp, `{` + rsp + `"max_output_tokens":2147483648}`, "max_output_tokens"},
		{"responses top_p 1e999", resp, `{` + rsp + `"top_p":1e999}`, "top_p"},
		{"messages max_tokens 1e999", msgs, `{"model":"` + modelChat + `","max_tokens":1e999,"messages":[{"role":"user","content":"x"}]}`, "max_tokens"},
		{"messages temperature 2", msgs, `{` + msg + `"temperature":2}`, "temperature"},
		{"count_tokens number 1e999", count, `{` + cnt + `"x":1e999}`, "x"},
		{"systemone number 1e999", s1, `{` + sys + `"scale":-1e999}`, "scale"},

		// text that is not valid Unicode
		{"chat content invalid UTF-8", chatPath, `{"model":"` + modelChat + `","messages":[{"role":"user","content":"Hej ` + "\xff\xfe" + `"}]}`, "messages[0].content"},
		{"chat key invalid UTF-8", chatPath, `{` + chat + `"k` + "\xc3\x28" + `":1}`, "k\uFFFD("},
		{"chat lone high surrogate", chatPath, `{"model":"` + modelChat + `","messages":[{"role":"user","content":"\ud800"}]}`, "messages[0].content"},
		{"chat lone low surrogate", chatPath, `{"model":"` + modelChat + `","messages":[{"role":"user","content":"x\udc00y"}]}`, "messages[0].content"},
		{"chat high surrogate before non-low", chatPath, `{"model":"` + modelChat + `","messages":[{"role":"user","content":"\ud83d\u0041"}]}`, "messages[0].content"},
		{"completions prompt lone surrogate", complete, `{"model":"` + modelChat + `","prompt":"\ud800"}`, "prompt"},
		{"embeddings input invalid UTF-8", embed, `{"model":"` + modelEmbed + `","input":["ok","` + "\x80" + `"]}`, "input[1]"},
		{"responses input lone surrogate", resp, `{"model":"` + modelChat + `","input":"\udfff"}`, "input"},
		{"messages content invalid UTF-8", msgs, `{"model":"` + modelChat + `","max_tokens":8,"messages":[{"role":"user","content":"` + "\xed\xa0\x80" + `"}]}`, "messages[0].content"},
		{"count_tokens system lone surrogate", count, `{` + cnt + `"system":"\ud800"}`, "system"},
		{"systemone question name invalid UTF-8", s1, `{"model":"` + modelSystemOne + `","state":"x","questions":{"q` + "\xff" + `":{"type":"noul"}}}`, "questions.q\uFFFD"},

		// duplicate keys, deep nesting
		{"chat duplicate model", chatPath, `{"model":"` + modelChat + `","messages":[{"role":"user","content":"x"}],"model":"` + modelEU + `"}`, "model"},
		{"embeddings duplicate input", embed, `{` + emb + `"input":"other"}`, "input"},
		{"messages duplicate max_tokens", msgs, `{` + msg + `"max_tokens":100000}`, "max_tokens"},
		{"chat deep nesting", chatPath, `{` + chat + `"x":` + deep + `}`, ""},
		{"systemone deep nesting", s1, `{` + sys + `"x":` + deep + `}`, ""},

		// remote media (no route of the conformance catalogue opts in)
		{"chat image_url https", chatPath, part(`{"type":"image_url","image_url":{"url":"https://example.com/cat.png"}}`), "messages[0].content[1].image_url.url"},
		{"chat image_url metadata address", chatPath, part(`{"type":"image_url","image_url":{"url":"http://169.254.169.254/latest/meta-data/"}}`), "messages[0].content[1].image_url.url"},
		{"chat image_url file", chatPath, part(`{"type":"image_url","image_url":{"url":"file:///etc/passwd"}}`), "messages[0].content[1].image_url.url"},
		{"chat video_url", chatPath, part(`{"type":"video_url","video_url":{"url":"https://example.com/v.mp4"}}`), "messages[0].content[1].video_url.url"},
		{"chat audio_url", chatPath, part(`{"type":"audio_url","audio_url":{"url":"ftp://example.com/a.wav"}}`), "messages[0].content[1].audio_url.url"},
		{"chat input_audio url", chatPath, part(`{"type":"input_audio","input_audio":{"data":"https://example.com/a.wav","format":"wav"}}`), "messages[0].content[1].input_audio.data"},
		{"chat file_id", chatPath, part(`{"type":"file","file":{"file_id":"file-abc123"}}`), "messages[0].content[1].file.file_id"},
		{"chat image_url untyped part", chatPath, part(`{"image_url":"https://example.com/cat.png"}`), "messages[0].content[1].image_url"},
		{"embeddings chat-style messages", embed, `{` + emb + `"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/x.png"}}]}]}`, "messages[0].content[0].image_url.url"},
		{"responses image_url", resp, `{"model":"` + modelChat + `","input":[{"role":"user","content":[{"type":"input_image","image_url":"https://example.com/x.png"}]}]}`, "input[0].content[0].image_url"},
		{"responses video_url", resp, `{"model":"` + modelChat + `","input":[{"role":"user","content":[{"type":"input_video","video_url":{"url":"https://example.com/v.mp4"}}]}]}`, "input[0].content[0].video_url.url"},
		{"messages url source", msgs, `{"model":"` + modelChat + `","max_tokens":8,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://example.com/x.png"}}]}]}`, "messages[0].content[0].source.type"},
		{"messages translated url source", msgs, `{"model":"` + modelTranslated + `","max_tokens":8,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"url","url":"https://example.com/x.pdf"}}]}]}`, "messages[0].content[0].source.type"},

		// provider extensions (no route opts in)
		{"completions prompt_embeds", complete, `{` + cmpl + `"prompt_embeds":"UEsDBBQAAAAIAAAAIQA="}`, "prompt_embeds"},
		{"chat prompt_embeds", chatPath, `{` + chat + `"prompt_embeds":["AAAA"]}`, "prompt_embeds"},
		{"chat chat_template", chatPath, `{` + chat + `"chat_template":"{% for x in range(99999999) %}{% endfor %}"}`, "chat_template"},
		{"chat chat_template in kwargs", chatPath, `{` + chat + `"chat_template_kwargs":{"chat_template":"{{ 7*7 }}"}}`, "chat_template_kwargs.chat_template"},
		{"chat image_embeds part", chatPath, part(`{"type":"image_embeds","image_embeds":"UEsDBA=="}`), "messages[0].content[1].image_embeds"},
		{"chat kv_transfer_params", chatPath, `{` + chat + `"kv_transfer_params":{"remote_host":"10.0.0.1","remote_port":5557}}`, "kv_transfer_params"},
		{"chat logits_processors", chatPath, `{` + chat + `"logits_processors":["os.system"]}`, "logits_processors"},
		{"embeddings prompt_embeds", embed, `{` + emb + `"prompt_embeds":"AAAA"}`, "prompt_embeds"},
		{"responses mm_processor_kwargs", resp, `{` + rsp + `"mm_processor_kwargs":{"num_frames":1000000}}`, "mm_processor_kwargs"},
		{"messages vllm_xargs", msgs, `{` + msg + `"vllm_xargs":{"x":1}}`, "vllm_xargs"},
		{"messages translated lora_path", msgs, `{` + chatTr + `"lora_path":"/models/other"}`, "lora_path"},
		{"responses translated input_embeds", resp, `{"model":"` + modelTranslated + `","input":"x","input_embeds":[[0.1]]}`, "input_embeds"},
		{"systemone media_io_kwargs", s1, `{` + sys + `"media_io_kwargs":{"video":{"num_frames":-1}}}`, "media_io_kwargs"},
	}
}

// TestHostileValues (interface: Errors): every hostile value is answered with the
// interface's JSON error, 400, naming the param; nothing reaches the simulator or the
// ledger. Not parallel, so that the simulator's request counter sees only this test.
func TestHostileValues(t *testing.T) {
	s := getStack(t)
	a := s.NewAccount(t, "se", 100)
	balance := func() int64 {
		v, ok := s.account(t, a)["balance_micro_sek"].(float64) // exact: far below 2^53
		if !ok {
			t.Fatal("account without balance_micro_sek")
		}
		return int64(v)
	}
	before, brokenBefore, balBefore := simStats(t, s).Requests, brokenSimRequests(t, s), balance()
	corpus := hostileValues()
	paths := map[string]bool{}
	for _, c := range corpus {
		paths[c.path] = true
		t.Run(c.name, func(t *testing.T) {
			r := s.Do(t, "POST", c.path, a.Key, nil, []byte(c.body))
			e := wantError(t, r, 400, "invalid_request_error")
			got := ""
			if e.Error.Param != nil {
				got = *e.Error.Param
			}
			if got != c.param {
				t.Fatalf("param %q, want %q: %s", got, c.param, r.Body)
			}
			if !json.Valid(r.Body) {
				t.Fatalf("answer is not JSON: %q", r.Body)
			}
			noRouteHeaders(t, r.Header)
		})
	}
	for _, p := range []string{"/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/responses",
		"/v1/messages", "/v1/messages/count_tokens", "/v1/systemone"} {
		if !paths[p] {
			t.Errorf("no hostile case for %s", p)
		}
	}
	if n := simStats(t, s).Requests - before; n != 0 {
		t.Errorf("the simulator saw %d requests from the hostile corpus", n)
	}
	if n := brokenSimRequests(t, s) - brokenBefore; n != 0 {
		t.Errorf("the second simulator saw %d requests from the hostile corpus", n)
	}

	// The ledger: one ordinary request afterwards is the account's only record and its
	// only charge (records reach the control plane in order, so a record of the corpus
	// would be there before it).
	ok := s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat, "max_tokens", 4))
	if ok.Status != 200 {
		t.Fatalf("ordinary request after the corpus: %d %s", ok.Status, ok.Body)
	}
	rec := s.waitRecord(t, a, ok.Header.Get("X-Request-Id"))
	recs, _ := s.listRecords(t, a, "")
	if len(recs) != 1 || recs[0].RequestID != rec.RequestID {
		t.Fatalf("records after the corpus: %+v", recs)
	}
	if balBefore != 100_000_000 || rec.PriceMicroSEK <= 0 {
		t.Fatalf("balance %d before the corpus, price %d", balBefore, rec.PriceMicroSEK)
	}
	s.waitFor(t, "the one charge in the balance", func() bool { return balance() != balBefore })
	if got, want := balance(), balBefore-rec.PriceMicroSEK; got != want {
		t.Fatalf("balance %d after the corpus and one request of %d micro-SEK, want %d", got, rec.PriceMicroSEK, want)
	}
}

// brokenSimRequests reads the request counter of the stack's second simulator.
func brokenSimRequests(t testing.TB, s *Stack) int64 {
	t.Helper()
	var st simStatsT
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(s.BrokenURL + "/sim/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st.Requests
}
