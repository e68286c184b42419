package openapi

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
)

var (
	specOnce sync.Once
	spec     *Spec
	specErr  error
)

func compiled(t testing.TB) *Spec {
	t.Helper()
	specOnce.Do(func() { spec, specErr = Compile() })
	if specErr != nil {
		t.Fatal(specErr)
	}
	return spec
}

const (
	modelJSON = `{"id":"m1","object":"model","created":0,"owned_by":"service","aliases":["a1"],"endpoint":"/v1/chat/completions",` +
		`"endpoints":["/v1/chat/completions","/v1/responses"],"pricing":{"currency":"SEK","input_ore_per_million_tokens":100,"output_ore_per_million_tokens":300},"context_tokens":8192}`
	recordJSON = `{"request_id":"01J0000000000000000000000A","ts":"2026-10-04T12:00:00Z","key_id":"key_0123456789ab","model":"m1",` +
		`"provider":"vllm-sto","residency":"se-sto-1","status":200,"result":"ok","prompt_tokens":10,"completion_tokens":5,` +
		`"price_micro_sek":3,"price_sek":"0.000003","routing":{"policy":"se","translated":false,"attempts":[{"route":"r1","provider":"vllm-sto","region":"se-sto-1","status":200,"duration_ms":12}]}}`
)

func TestSampleBodies(t *testing.T) {
	s := compiled(t)
	many := `"x"` + strings.Repeat(`,"x"`, 128) // 129 inputs
	tests := []struct {
		schema, name, body string
		ok                 bool
	}{
		{"Error", "full", `{"error":{"type":"invalid_request_error","message":"bad","code":null,"param":"model"},"documentation_url":"https://example.com/docs"}`, true},
		{"Error", "minimal", `{"error":{"type":"api_error","message":"x"}}`, true},
		{"Error", "no message", `{"error":{"type":"api_error","code":"internal_error"}}`, false},
		{"Error", "no type", `{"error":{"message":"x"}}`, false},
		{"Error", "integer code", `{"error":{"type":"api_error","message":"x","code":400}}`, false},
		{"Error", "unknown field", `{"error":{"type":"api_error","message":"x"},"object":"error"}`, false},
		{"Error", "not a URI", `{"error":{"type":"api_error","message":"x"},"documentation_url":"no uri"}`, false},
		{"Error", "no envelope", `{"message":"x"}`, false},
		{"MessagesError", "ok", `{"type":"error","error":{"type":"authentication_error","message":"x","code":"invalid_api_key","param":null}}`, true},
		{"MessagesError", "no top-level type", `{"error":{"type":"authentication_error","message":"x"}}`, false},
		{"MessagesError", "wrong top-level type", `{"type":"message","error":{"type":"x","message":"x"}}`, false},
		{"NotSupportedError", "ok", `{"error":{"type":"not_supported_error","message":"x","code":"endpoint_not_supported","param":null},"documentation_url":"https://example.com/docs"}`, true},
		{"NotSupportedError", "no documentation_url", `{"error":{"type":"not_supported_error","message":"x","code":"endpoint_not_supported"}}`, false},
		{"NotSupportedError", "other code", `{"error":{"type":"x","message":"x","code":"model_not_found"},"documentation_url":"https://example.com/d"}`, false},

		{"Model", "ok", modelJSON, true},
		{"Model", "wrong owner", strings.Replace(modelJSON, `"owned_by":"service"`, `"owned_by":"acme"`, 1), false},
		{"Model", "context 0", strings.Replace(modelJSON, `"context_tokens":8192`, `"context_tokens":0`, 1), false},
		{"Model", "negative price", strings.Replace(modelJSON, `"input_ore_per_million_tokens":100`, `"input_ore_per_million_tokens":-1`, 1), false},
		{"Model", "float price", strings.Replace(modelJSON, `"input_ore_per_million_tokens":100`, `"input_ore_per_million_tokens":1.5`, 1), false},
		{"Model", "no pricing", strings.Replace(modelJSON, `,"pricing":{"currency":"SEK","input_ore_per_million_tokens":100,"output_ore_per_million_tokens":300}`, "", 1), false},
		{"Model", "unknown endpoint", strings.Replace(modelJSON, `"endpoints":["/v1/chat/completions",`, `"endpoints":["/v1/images",`, 1), false},
		{"ModelList", "models", `{"object":"list","data":[` + modelJSON + `]}`, true},
		{"ModelList", "empty with service", `{"object":"list","data":[],"service":{"code":"no_models_available","message":"No model is enabled."}}`, true},
		{"ModelList", "empty without service", `{"object":"list","data":[]}`, false},
		{"ModelList", "service with models", `{"object":"list","data":[` + modelJSON + `],"service":{"code":"no_models_available","message":"x"}}`, false},
		{"ModelList", "service without message", `{"object":"list","data":[],"service":{"code":"no_models_available"}}`, false},

		{"ChatCompletionRequest", "ok with extras", `{"model":"m","messages":[{"role":"user","content":"hi","name":"x"}],"stream":true,"stream_options":{"include_usage":true,"x":1},"stop":null,"top_k":5}`, true},
		{"ChatCompletionRequest", "store true", `{"model":"m","messages":[],"store":true}`, false},
		{"ChatCompletionRequest", "max_tokens 0", `{"model":"m","messages":[],"max_tokens":0}`, false},
		{"ChatCompletionRequest", "no messages", `{"model":"m"}`, false},
		{"ChatCompletionRequest", "message without role", `{"model":"m","messages":[{"content":"hi"}]}`, false},
		{"ChatCompletionRequest", "stop array", `{"model":"m","messages":[],"stop":["a","b"]}`, true},
		{"ChatCompletionRequest", "stop number", `{"model":"m","messages":[],"stop":5}`, false},
		{"ChatCompletionResponse", "ok", `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2},"system_fingerprint":null}`, true},
		{"ChatCompletionResponse", "tool calls", `{"id":"c1","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"t","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`, true},
		{"ChatCompletionResponse", "choice without finish_reason", `{"id":"c1","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"x"}}]}`, false},
		{"ChatCompletionResponse", "usage without total", `{"id":"c1","model":"m","choices":[],"usage":{"prompt_tokens":1}}`, false},
		{"ChatCompletionChunk", "usage chunk", `{"id":"c1","object":"chat.completion.chunk","model":"m","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`, true},
		{"ChatCompletionChunk", "delta", `{"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"h"},"finish_reason":null}],"usage":null}`, true},
		{"ChatCompletionChunk", "wrong object", `{"id":"c1","object":"chat.completion","choices":[]}`, false},

		{"CompletionRequest", "ok", `{"model":"m","prompt":"once","n":1,"best_of":1,"logprobs":5}`, true},
		{"CompletionRequest", "prompt array", `{"model":"m","prompt":["a","b"]}`, false},
		{"CompletionRequest", "token ids", `{"model":"m","prompt":[1,2,3]}`, false},
		{"CompletionRequest", "n 2", `{"model":"m","prompt":"x","n":2}`, false},
		{"CompletionRequest", "logprobs 6", `{"model":"m","prompt":"x","logprobs":6}`, false},
		{"CompletionResponse", "ok", `{"id":"c","object":"text_completion","model":"m","choices":[{"index":0,"text":"x","logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`, true},
		{"CompletionResponse", "no usage", `{"id":"c","object":"text_completion","model":"m","choices":[]}`, false},

		{"EmbeddingRequest", "string", `{"model":"e","input":"search_query: x"}`, true},
		{"EmbeddingRequest", "array", `{"model":"e","input":["a","b"],"encoding_format":"base64","dimensions":256}`, true},
		{"EmbeddingRequest", "empty string", `{"model":"e","input":""}`, false},
		{"EmbeddingRequest", "empty item", `{"model":"e","input":["a",""]}`, false},
		{"EmbeddingRequest", "129 inputs", `{"model":"e","input":[` + many + `]}`, false},
		{"EmbeddingRequest", "tokens", `{"model":"e","input":[[1,2]]}`, false},
		{"EmbeddingRequest", "stream", `{"model":"e","input":"x","stream":true}`, false},
		{"EmbeddingRequest", "format", `{"model":"e","input":"x","encoding_format":"int8"}`, false},
		{"EmbeddingResponse", "floats", `{"object":"list","model":"e","data":[{"object":"embedding","index":0,"embedding":[0.1,-0.2]}],"usage":{"prompt_tokens":2,"total_tokens":2}}`, true},
		{"EmbeddingResponse", "base64", `{"object":"list","model":"e","data":[{"object":"embedding","index":0,"embedding":"AACAPw=="}],"usage":{"prompt_tokens":2,"total_tokens":2}}`, true},
		{"EmbeddingResponse", "negative index", `{"object":"list","model":"e","data":[{"object":"embedding","index":-1,"embedding":[]}],"usage":{"prompt_tokens":2,"total_tokens":2}}`, false},

		{"ResponsesRequest", "ok", `{"model":"m","input":[{"role":"user","content":"hi"}],"tools":[{"type":"function","name":"f","parameters":{}}],"store":false}`, true},
		{"ResponsesRequest", "previous id", `{"model":"m","input":"x","previous_response_id":"resp_1"}`, false},
		{"ResponsesRequest", "hosted tool", `{"model":"m","input":"x","tools":[{"type":"web_search","name":"w"}]}`, false},
		{"ResponsesRequest", "background", `{"model":"m","input":"x","background":true}`, false},
		{"ResponsesResponse", "ok", `{"id":"r","object":"response","status":"completed","output":[{"type":"message"}],"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2},"extra":1}`, true},
		{"ResponsesResponse", "no output", `{"id":"r"}`, false},

		{"MessagesRequest", "ok", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"system":[{"type":"text","text":"s"}],"tools":[{"name":"t","input_schema":{},"type":null}]}`, true},
		{"MessagesRequest", "no max_tokens", `{"model":"m","messages":[]}`, false},
		{"MessagesRequest", "tool without schema", `{"model":"m","max_tokens":1,"messages":[],"tools":[{"name":"t"}]}`, false},
		{"MessagesRequest", "hosted tool", `{"model":"m","max_tokens":1,"messages":[],"tools":[{"name":"t","input_schema":{},"type":"web_search_20250305"}]}`, false},
		{"MessagesResponse", "ok", `{"id":"msg","type":"message","role":"assistant","content":[{"type":"text","text":"x"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`, true},
		{"MessagesResponse", "wrong type", `{"id":"msg","type":"error","content":[]}`, false},
		{"CountTokensRequest", "stream", `{"model":"m","messages":[],"stream":true}`, false},
		{"TokenCountResponse", "ok", `{"input_tokens":3}`, true},
		{"TokenCountResponse", "negative", `{"input_tokens":-3}`, false},

		{"SystemOneRequest", "ok", `{"model":"s","state":"text","questions":{"q1":{"type":"choice","choices":["a","b"]},"q2":{"type":"noul"},"q3":{"type":"score","scale":10}}}`, true},
		{"SystemOneRequest", "choice without choices", `{"model":"s","state":"t","questions":{"q":{"type":"choice"}}}`, false},
		{"SystemOneRequest", "unknown type", `{"model":"s","state":"t","questions":{"q":{"type":"rank"}}}`, false},
		{"SystemOneRequest", "no state", `{"model":"s","questions":{}}`, false},
		{"SystemOneResponse", "ok", `{"model":"s","answers":{"q1":{"choice":"a"},"q2":{"value":"unknown"},"q3":{"score":0.7,"confidence":0.9}},"usage":{"input_tokens":5,"output_tokens":1}}`, true},
		{"SystemOneResponse", "noul maybe", `{"model":"s","answers":{"q2":{"value":"maybe"}}}`, false},
		{"SystemOneResponse", "empty answer", `{"model":"s","answers":{"q":{}}}`, false},
		{"SystemOneResponse", "no model", `{"answers":{}}`, false},

		{"Account", "negative balance", `{"customer":"Acme","residency":"se","balance_micro_sek":-2500000,"balance_sek":"-2.50","usage_30d":[{"model":"m1","requests":3,"prompt_tokens":10,"completion_tokens":5,"price_micro_sek":3,"price_sek":"0.000003"}]}`, true},
		{"Account", "float balance", `{"customer":"Acme","residency":"se","balance_micro_sek":1.5,"balance_sek":"1.50","usage_30d":[]}`, false},
		{"Account", "numeric balance_sek", `{"customer":"Acme","residency":"se","balance_micro_sek":1,"balance_sek":1.5,"usage_30d":[]}`, false},
		{"Account", "residency us", `{"customer":"Acme","residency":"us","balance_micro_sek":1,"balance_sek":"0.000001","usage_30d":[]}`, false},
		{"Account", "usage item without requests", `{"customer":"Acme","residency":"any","balance_micro_sek":0,"balance_sek":"0.00","usage_30d":[{"model":"m1","prompt_tokens":1,"completion_tokens":1,"price_micro_sek":1,"price_sek":"0.000001"}]}`, false},

		{"RequestRecord", "ok", recordJSON, true},
		{"RequestRecord", "console box", strings.Replace(recordJSON, `"key_id":"key_0123456789ab"`, `"key_id":null`, 1), true},
		{"RequestRecord", "bad key id", strings.Replace(recordJSON, `"key_id":"key_0123456789ab"`, `"key_id":"key_XYZ"`, 1), false},
		{"RequestRecord", "no key_id", strings.Replace(recordJSON, `"key_id":"key_0123456789ab",`, ``, 1), false},
		{"RequestRecord", "unknown result", strings.Replace(recordJSON, `"result":"ok"`, `"result":"weird"`, 1), false},
		{"RequestRecord", "bad ts", strings.Replace(recordJSON, `"ts":"2026-10-04T12:00:00Z"`, `"ts":"yesterday"`, 1), false},
		{"RequestRecord", "content leaked", strings.Replace(recordJSON, `"model":"m1"`, `"model":"m1","prompt":"secret"`, 1), false},
		{"RequestRecord", "null routing", strings.Replace(recordJSON, `"routing":{"policy":"se","translated":false,"attempts":[{"route":"r1","provider":"vllm-sto","region":"se-sto-1","status":200,"duration_ms":12}]}`, `"routing":null`, 1), true},
		{"RequestRecordList", "ok", `{"data":[` + recordJSON + `],"has_more":true,"next_after":"abc"}`, true},
		{"RequestRecordList", "last page", `{"data":[],"has_more":false,"next_after":null}`, true},
		{"RequestRecordList", "empty", `{"data":[]}`, true},
		{"RequestRecordList", "no data", `{"next_after":"abc"}`, false},

		{"TopupRequest", "ok", `{"amount_sek":100}`, true},
		{"TopupRequest", "99", `{"amount_sek":99}`, false},
		{"TopupRequest", "50001", `{"amount_sek":50001}`, false},
		{"TopupRequest", "fraction", `{"amount_sek":100.5}`, false},
		{"TopupRequest", "string", `{"amount_sek":"100"}`, false},
		{"TopupResponse", "ok", `{"url":"https://checkout.example.com/c/pay/cs_test_1"}`, true},
		{"TopupResponse", "not a uri", `{"url":"checkout"}`, false},
		{"SignupForm", "ok", `{"name":"Ada","email":"ada@example.com","consent":"yes","use_case":"eval","website":""}`, true},
		{"SignupForm", "honeypot", `{"name":"Ada","email":"ada@example.com","consent":"yes","website":"http://spam"}`, false},
		{"SignupForm", "no consent", `{"name":"Ada","email":"ada@example.com","consent":"no"}`, false},
		{"SignupForm", "bad email", `{"name":"Ada","email":"ada","consent":"yes"}`, false},
		{"SignupForm", "long name", `{"name":"` + strings.Repeat("a", 201) + `","email":"ada@example.com","consent":"yes"}`, false},
		{"WebhookResponse", "ok", `{"received":true}`, true},
		{"WebhookResponse", "string", `{"received":"yes"}`, false},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		seen[tt.schema] = true
		t.Run(tt.schema+"/"+tt.name, func(t *testing.T) {
			err := s.ValidateSchema(tt.schema, []byte(tt.body))
			if tt.ok && err != nil {
				t.Errorf("want valid, got %v", err)
			}
			if !tt.ok && err == nil {
				t.Error("want invalid, got valid")
			}
		})
	}
	if len(seen) < 12 {
		t.Errorf("only %d schemas exercised", len(seen))
	}
	if err := s.ValidateSchema("NoSuchSchema", []byte(`{}`)); err == nil {
		t.Error("unknown schema name accepted")
	}
}

const (
	errBody     = `{"error":{"type":"not_found_error","message":"x","code":"endpoint_not_found","param":null}}`
	msgErrBody  = `{"type":"error","error":{"type":"authentication_error","message":"x","code":"invalid_api_key","param":null}}`
	notSuppBody = `{"error":{"type":"not_supported_error","message":"x","code":"endpoint_not_supported","param":null},"documentation_url":"https://example.com/docs"}`
	chatStream  = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n" +
		": keep-alive\n\n" +
		"data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1,\"total_tokens\":2}}\r\n\r\n" +
		"data: [DONE]\n\n"
	msgStream = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
)

func TestValidateResponse(t *testing.T) {
	s := compiled(t)
	tests := []struct {
		name              string
		method, path      string
		status            int
		contentType, body string
		wantErr           error // nil means valid
	}{
		{"models 200", "GET", "/v1/models", 200, "application/json", `{"object":"list","data":[` + modelJSON + `]}`, nil},
		{"concrete path", "GET", "/v1/models/m1", 200, "application/json; charset=utf-8", modelJSON, nil},
		{"model 404", "GET", "/v1/models/{model}", 404, "application/json", errBody, nil},
		{"model 404 bad body", "GET", "/v1/models/{model}", 404, "application/json", `{"error":"nope"}`, ErrInvalidBody},
		{"empty error body", "GET", "/v1/models/{model}", 404, "application/json", ``, ErrInvalidBody},
		{"undocumented status", "GET", "/v1/models", 418, "application/json", errBody, ErrUndocumentedStatus},
		{"undocumented content type", "GET", "/v1/models", 200, "text/html", `<html>`, ErrUndocumentedContentType},
		{"head without body", "HEAD", "/v1/models", 200, "application/json", ``, nil},
		{"head with body", "HEAD", "/v1/models", 200, "application/json", `{}`, ErrInvalidBody},
		{"head error without body", "HEAD", "/v1/service/account", 401, "application/json", ``, nil},
		{"delete model 405", "DELETE", "/v1/models/{model}", 405, "application/json", errBody, nil},
		{"undeclared method 405", "PUT", "/v1/chat/completions", 405, "application/json", errBody, nil},
		{"undeclared method 200", "PUT", "/v1/chat/completions", 200, "application/json", `{}`, ErrUnknownOperation},
		{"unknown path 404", "GET", "/v2/nothing", 404, "application/json", errBody, nil},
		{"unknown path 200", "GET", "/v2/nothing", 200, "application/json", `{}`, ErrUnknownPath},
		{"options 204", "OPTIONS", "/v1/chat/completions", 204, "", ``, nil},
		{"options 204 with body", "OPTIONS", "/v1/chat/completions", 204, "", `x`, ErrInvalidBody},
		{"healthz ok", "GET", "/healthz", 200, "text/plain; charset=utf-8", `ok`, nil},
		{"healthz other text", "GET", "/healthz", 200, "text/plain", `OK\n`, ErrInvalidBody},
		{"docs redirect", "GET", "/docs", 302, "", ``, nil},
		{"signup redirect", "POST", "/v1/service/signup", 303, "", ``, nil},
		{"signup get 405", "GET", "/v1/service/signup", 405, "application/json", errBody, nil},
		{"family root 501", "GET", "/v1/files", 501, "application/json", notSuppBody, nil},
		{"family child 501", "DELETE", "/v1/files/file_1/content", 501, "application/json", notSuppBody, nil},
		{"family 501 without doc link", "POST", "/v1/images", 501, "application/json", errBody, ErrInvalidBody},
		{"stored response 501", "GET", "/v1/responses/resp_1", 501, "application/json", notSuppBody, nil},
		{"stored chat messages 501", "GET", "/v1/chat/completions/c1/messages", 501, "application/json", notSuppBody, nil},
		{"messages 401", "POST", "/v1/messages", 401, "application/json", msgErrBody, nil},
		{"messages 401 plain envelope", "POST", "/v1/messages", 401, "application/json", errBody, ErrInvalidBody},
		{"chat 401 messages envelope", "POST", "/v1/chat/completions", 401, "application/json", msgErrBody, nil},
		{"chat stream", "POST", "/v1/chat/completions", 200, "text/event-stream", chatStream, nil},
		{"chat stream bad chunk", "POST", "/v1/chat/completions", 200, "text/event-stream", "data: {\"id\":1}\n\ndata: [DONE]\n\n", ErrInvalidBody},
		{"chat stream not json", "POST", "/v1/chat/completions", 200, "text/event-stream", "data: {\"choi\n\n", ErrInvalidBody},
		{"empty stream", "POST", "/v1/chat/completions", 200, "text/event-stream", "", ErrInvalidBody},
		{"messages stream", "POST", "/v1/messages", 200, "text/event-stream", msgStream, nil},
		{"messages stream name mismatch", "POST", "/v1/messages", 200, "text/event-stream", "event: message_stop\ndata: {\"type\":\"ping\"}\n\n", ErrInvalidBody},
		{"embeddings no stream", "POST", "/v1/embeddings", 200, "text/event-stream", chatStream, ErrUndocumentedContentType},
		{"openapi itself", "GET", "/openapi.json", 200, "application/json", string(Document()), nil},
		{"webhook ack", "POST", "/v1/stripe/webhook", 200, "application/json", `{"received":true}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.ValidateResponse(tt.method, tt.path, tt.status, tt.contentType, []byte(tt.body))
			switch {
			case tt.wantErr == nil && err != nil:
				t.Errorf("want valid, got %v", err)
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Errorf("want %v, got %v", tt.wantErr, err)
			}
		})
	}
}

func TestValidateHeaders(t *testing.T) {
	s := compiled(t)
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	tests := []struct {
		name         string
		method, path string
		status       int
		h            http.Header
		ok           bool
	}{
		{"chat 200", "POST", "/v1/chat/completions", 200, hdr("X-Request-Id", "r1", "X-Service-Policy", "se", "X-Service-Provider", "p", "X-Service-Residency", "se-sto-1"), true},
		{"chat 200 without request id", "POST", "/v1/chat/completions", 200, hdr("X-Service-Policy", "se"), false},
		{"bad policy", "GET", "/v1/models", 200, hdr("X-Request-Id", "r1", "X-Service-Policy", "us"), false},
		{"503 with Retry-After", "POST", "/v1/chat/completions", 503, hdr("X-Request-Id", "r1", "Retry-After", "5"), true},
		{"503 without Retry-After", "POST", "/v1/chat/completions", 503, hdr("X-Request-Id", "r1"), false},
		{"503 with a date", "POST", "/v1/chat/completions", 503, hdr("X-Request-Id", "r1", "Retry-After", "Wed, 21 Oct 2026 07:28:00 GMT"), false},
		{"429 without Retry-After", "POST", "/v1/completions", 429, hdr("X-Request-Id", "r1"), true},
		{"405 with Allow", "PATCH", "/v1/models", 405, hdr("X-Request-Id", "r1", "Allow", "GET, HEAD, OPTIONS"), true},
		{"405 without Allow", "DELETE", "/v1/models/{model}", 405, hdr("X-Request-Id", "r1"), false},
		{"options", "OPTIONS", "/v1/service/account", 204, hdr("X-Request-Id", "r1", "Allow", "GET, HEAD, OPTIONS"), true},
		{"options without Allow", "OPTIONS", "/v1/service/account", 204, hdr("X-Request-Id", "r1"), false},
		{"signup without Location", "POST", "/v1/service/signup", 303, hdr("X-Request-Id", "r1"), false},
		{"signup relative Location", "POST", "/v1/service/signup", 303, hdr("X-Request-Id", "r1", "Location", "/thanks"), false},
		{"signup Location", "POST", "/v1/service/signup", 303, hdr("X-Request-Id", "r1", "Location", "https://example.com/thanks"), true},
		{"docs", "GET", "/docs", 302, hdr("X-Request-Id", "r1", "Location", "https://example.com/reference"), true},
		{"healthz", "GET", "/healthz", 200, hdr("X-Request-Id", "r1"), true},
		{"healthz without request id", "GET", "/healthz", 200, hdr(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.ValidateHeaders(tt.method, tt.path, tt.status, tt.h)
			if tt.ok && err != nil {
				t.Errorf("want valid, got %v", err)
			}
			if !tt.ok && !errors.Is(err, ErrInvalidHeader) {
				t.Errorf("want ErrInvalidHeader, got %v", err)
			}
		})
	}
}

func TestCheckStreamTerminal(t *testing.T) {
	s := compiled(t)
	respStream := "event: response.created\ndata: {\"type\":\"response.created\"}\n\n"
	tests := []struct {
		name, path, body string
		want             error
	}{
		{"chat done", "/v1/chat/completions", chatStream, nil},
		{"chat cut", "/v1/chat/completions", strings.TrimSuffix(chatStream, "data: [DONE]\n\n"), ErrIncompleteStream},
		{"completions done", "/v1/completions", "data: {\"choices\":[]}\n\ndata: [DONE]\n\n", nil},
		{"messages stop", "/v1/messages", msgStream, nil},
		{"messages cut", "/v1/messages", strings.Split(msgStream, "event: message_stop")[0], ErrIncompleteStream},
		{"responses completed", "/v1/responses", respStream + "event: response.completed\ndata: {\"type\":\"response.completed\"}\n\n", nil},
		{"responses failed", "/v1/responses", respStream + "event: response.failed\ndata: {\"type\":\"response.failed\"}\n\n", ErrIncompleteStream},
		{"empty", "/v1/messages", "", ErrIncompleteStream},
		{"no stream documented", "/v1/embeddings", chatStream, ErrUndocumentedContentType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.CheckStreamTerminal("POST", tt.path, []byte(tt.body))
			if (tt.want == nil) != (err == nil) || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestMatchPath(t *testing.T) {
	s := compiled(t)
	tests := map[string]string{
		"/v1/models":                   "/v1/models",
		"/v1/models/org%2Fm":           "/v1/models/{model}",
		"/v1/service/requests/abc":     "/v1/service/requests/{id}",
		"/v1/responses/input_tokens":   "/v1/responses/input_tokens",
		"/v1/responses/r1":             "/v1/responses/{id}",
		"/v1/responses/r1/x/y":         "/v1/responses/{id}",
		"/v1/vector_stores/vs_1/files": "/v1/vector_stores",
		"/v1/fine_tuning":              "/v1/fine_tuning",
		"/v1/chat/completions":         "/v1/chat/completions",
		"/v1/filesystem":               "",
		"/v1/models/":                  "",
		"/nothing":                     "",
	}
	for in, want := range tests {
		got, ok := s.MatchPath(in)
		if got != want || ok != (want != "") {
			t.Errorf("MatchPath(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

func TestParseSSE(t *testing.T) {
	evs := ParseSSE([]byte("event: a\ndata: 1\ndata:2\n\n: comment\n\nid: 5\n\nevent: b\r\ndata: {\"x\": 1}\r\n\r\ndata: tail"))
	want := []Event{{"a", "1\n2"}, {"b", `{"x": 1}`}, {"", "tail"}}
	if len(evs) != len(want) {
		t.Fatalf("got %d events %q, want %d", len(evs), evs, len(want))
	}
	for i := range want {
		if evs[i] != want[i] {
			t.Errorf("event %d = %+v, want %+v", i, evs[i], want[i])
		}
	}
}

func FuzzParseSSE(f *testing.F) {
	f.Add([]byte(chatStream))
	f.Add([]byte(msgStream))
	f.Add([]byte("data\n\ndata:\r\r:x\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, ev := range ParseSSE(b) {
			if strings.ContainsAny(ev.Event, "\r\n") {
				t.Fatalf("event name %q holds a line break", ev.Event)
			}
			if strings.Contains(ev.Data, "\r") {
				t.Fatalf("data %q holds a CR", ev.Data)
			}
		}
	})
}

func BenchmarkValidateResponse(b *testing.B) {
	s := compiled(b)
	body := []byte(`{"object":"list","data":[` + modelJSON + `]}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := s.ValidateResponse("GET", "/v1/models", 200, "application/json", body); err != nil {
			b.Fatal(err)
		}
	}
}
