package conformance

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"
	"testing"
	"time"

	anthropic "github.com/anthropics/anthropic-sdk-go"
	anthropic2 "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stripe/stripe-go/v76/webhook"
)

// Section "Endpoints", one test per endpoint rule.

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// GET /healthz: no authentication, 200 text/plain.
func TestEndpoints_Healthz_PlainTextWithoutAuth(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	r := s.Do(t, "GET", "/healthz", "", nil, nil)
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") || len(r.Body) == 0 {
		t.Fatalf("healthz: %d %q %q", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
}

// GET /v1/models: the list is filtered by account (only enabled models) with integer öre prices.
func TestEndpoints_Models_ListFilteredByAccount(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	a := s.NewAccount(t, "se", 0, modelChat, modelEmbed)
	c := openAIClient(t, s, a.Key)
	page, err := c.Models.List(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, ",") != modelChat+","+modelEmbed && strings.Join(ids, ",") != modelEmbed+","+modelChat {
		t.Fatalf("models %v, want exactly the two enabled", ids)
	}
	r := s.Do(t, "GET", "/v1/models", a.Key, nil, nil)
	if r.Header.Get("X-Service-Policy") != "se" {
		t.Errorf("X-Service-Policy %q", r.Header.Get("X-Service-Policy"))
	}
	var list struct {
		Data []struct {
			ID      string
			Pricing struct {
				Currency string
				In       json.Number `json:"input_ore_per_million_tokens"`
				Out      json.Number `json:"output_ore_per_million_tokens"`
			}
		}
	}
	if err := json.Unmarshal(r.Body, &list); err != nil {
		t.Fatal(err)
	}
	for _, m := range list.Data {
		if m.ID == modelChat && (m.Pricing.Currency != "SEK" || m.Pricing.In.String() != fmt.Sprint(chatInOre) || m.Pricing.Out.String() != fmt.Sprint(chatOutOre)) {
			t.Errorf("pricing of %s: %+v", m.ID, m.Pricing)
		}
	}
}

// GET /v1/models: a valid key with no enabled model gets 200, data [] and no_models_available.
func TestEndpoints_Models_EmptyListHasServiceCode(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	a := s.NewAccount(t, "se", 0, []string{}...)
	r := s.Do(t, "GET", "/v1/models", a.Key, nil, nil)
	var list struct {
		Object  string
		Data    []any
		Service *struct{ Code, Message string }
	}
	if err := json.Unmarshal(r.Body, &list); err != nil || r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if list.Object != "list" || list.Data == nil || len(list.Data) != 0 || list.Service == nil ||
		list.Service.Code != "no_models_available" || list.Service.Message == "" {
		t.Fatalf("empty list: %s", r.Body)
	}
}

// GET /v1/models/{model}: an alias resolves to the canonical ID.
func TestEndpoints_ModelsRetrieve_AliasResolvesToCanonical(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	c := openAIClient(t, s, a.Key)
	m, err := c.Models.Get(ctx(t), aliasChat)
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != modelChat {
		t.Fatalf("alias %s resolved to %q", aliasChat, m.ID)
	}
}

// GET /v1/models/{model}: a slash in an alias is encoded as %2F.
func TestEndpoints_ModelsRetrieve_SlashAliasEncoded(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	r := s.Do(t, "GET", "/v1/models/"+url.PathEscape(slashAliasChat), a.Key, nil, nil)
	if r.Status != 200 || r.JSON(t)["id"] != modelChat {
		t.Fatalf("%s: %d %s", url.PathEscape(slashAliasChat), r.Status, r.Body)
	}
}

// GET /v1/models/{model}: hidden and unknown models both return 404 model_not_found.
func TestEndpoints_ModelsRetrieve_HiddenAndUnknownAre404(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	a := s.NewAccount(t, "se", 0, modelEmbed)
	hidden := wantError(t, s.Do(t, "GET", "/v1/models/"+modelChat, a.Key, nil, nil), 404, "model_not_found")
	unknown := wantError(t, s.Do(t, "GET", "/v1/models/no-such-model", a.Key, nil, nil), 404, "model_not_found")
	if hidden.Error.Message != unknown.Error.Message {
		t.Errorf("hidden and unknown models are told apart: %q vs %q", hidden.Error.Message, unknown.Error.Message)
	}
}

// DELETE /v1/models/{model} returns 405.
func TestEndpoints_ModelsRetrieve_DeleteIs405(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	r := s.Do(t, "DELETE", "/v1/models/"+modelChat, a.Key, nil, nil)
	wantError(t, r, 405, "method_not_allowed")
	if !strings.Contains(r.Header.Get("Allow"), "GET") || strings.Contains(r.Header.Get("Allow"), "DELETE") {
		t.Errorf("Allow %q", r.Header.Get("Allow"))
	}
}

// POST /v1/chat/completions through the OpenAI SDK.
func TestEndpoints_Chat_OpenAISDK(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	c := openAIClient(t, s, a.Key)
	res, err := c.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{
		Model: aliasChat, Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Svara kort."), openai.UserMessage("Hej")},
		Temperature: openai.Float(0.2), Seed: openai.Int(7), MaxTokens: openai.Int(32),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.ID == "" || len(res.Choices) != 1 || res.Choices[0].Message.Content == "" || res.Usage.TotalTokens <= 0 {
		t.Fatalf("chat: %+v", res)
	}
}

// POST /v1/chat/completions: store true is refused.
func TestEndpoints_Chat_StoreTrueRefused(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	wantError(t, s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat, "store", true)), 400, "")
	if r := s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat, "store", false)); r.Status != 200 {
		t.Fatalf("store false: %d %s", r.Status, r.Body)
	}
}

// POST /v1/chat/completions: additional properties pass to the provider (the simulator's
// own extension object changes its answer).
func TestEndpoints_Chat_AdditionalPropertiesPassToProvider(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	r := s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat, "sim", sim("output_tokens", 3)))
	var res struct {
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	if json.Unmarshal(r.Body, &res); r.Status != 200 || res.Usage.CompletionTokens != 3 {
		t.Fatalf("extension field did not reach the provider: %d %s", r.Status, r.Body)
	}
}

// POST /v1/chat/completions: finish_reason length means the output limit was reached.
func TestEndpoints_Chat_MaxTokensGivesLength(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	res, err := oa(t, s, a.Key).Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{
		Model: modelChat, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Berätta en lång saga")}, MaxTokens: openai.Int(2),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Choices[0].FinishReason != "length" || res.Usage.CompletionTokens != 2 {
		t.Fatalf("finish %q, %d tokens", res.Choices[0].FinishReason, res.Usage.CompletionTokens)
	}
}

// POST /v1/completions through the OpenAI SDK.
func TestEndpoints_Completions_OpenAISDK(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	res, err := oa(t, s, a.Key).Completions.New(ctx(t), openai.CompletionNewParams{
		Model: modelChat, Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Det var en gång")}, MaxTokens: openai.Int(8),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Object != "text_completion" || len(res.Choices) != 1 || res.Choices[0].Text == "" || res.Usage.PromptTokens <= 0 {
		t.Fatalf("completion: %+v", res)
	}
}

// POST /v1/completions: only a model whose endpoints include /v1/completions.
func TestEndpoints_Completions_ModelWithoutProtocolIs400(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	wantError(t, s.Post(t, "/v1/completions", a.Key, map[string]any{"model": modelEmbed, "prompt": "Hej"}), 400, "")
}

// POST /v1/embeddings through the OpenAI SDK: 768 dimensions by default.
func TestEndpoints_Embeddings_OpenAISDK768Dimensions(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	res, err := oa(t, s, a.Key).Embeddings.New(ctx(t), openai.EmbeddingNewParams{
		Model: modelEmbed, Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"search_document: Hej", "search_query: Hej"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Data) != 2 || len(res.Data[0].Embedding) != 768 || res.Data[1].Index != 1 || res.Usage.PromptTokens <= 0 {
		t.Fatalf("embeddings: %d items, %d dims", len(res.Data), len(res.Data[0].Embedding))
	}
}

// POST /v1/embeddings: encoding_format base64 is a float32 vector.
func TestEndpoints_Embeddings_Base64IsFloat32(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	r := s.Post(t, "/v1/embeddings", a.Key, map[string]any{"model": modelEmbed, "input": "Hej", "encoding_format": "base64"})
	var res struct{ Data []struct{ Embedding string } }
	if err := json.Unmarshal(r.Body, &res); err != nil || r.Status != 200 || len(res.Data) != 1 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	raw, err := base64.StdEncoding.DecodeString(res.Data[0].Embedding)
	if err != nil || len(raw) != 768*4 {
		t.Fatalf("base64 vector: %v, %d bytes", err, len(raw))
	}
}

// POST /v1/embeddings: only input tokens are charged, at the model's input rate.
func TestEndpoints_Embeddings_ChargesInputTokensOnly(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	a := s.NewAccount(t, "se", 100, modelEmbed, modelChat)
	r := s.Post(t, "/v1/embeddings", a.Key, map[string]any{"model": modelEmbed, "input": "Hej på dig"})
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	rec := s.waitRecord(t, a, r.Header.Get("X-Request-Id"))
	if rec.PromptTokens == nil || *rec.PromptTokens <= 0 {
		t.Fatalf("record without prompt tokens: %+v", rec)
	}
	if rec.CompletionTokens != nil && *rec.CompletionTokens != 0 {
		t.Errorf("embedding billed %d completion tokens", *rec.CompletionTokens)
	}
	want := (*rec.PromptTokens*100 + 99) / 100 // ceil(tokens * 100 öre/M / 100)
	if rec.PriceMicroSEK != want {
		t.Errorf("price %d micro-SEK for %d tokens at 100 öre/M, want %d", rec.PriceMicroSEK, *rec.PromptTokens, want)
	}
}

// POST /v1/responses through the OpenAI SDK (native route).
func TestEndpoints_Responses_OpenAISDK(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	res, err := oa(t, s, a.Key).Responses.New(ctx(t), responses.ResponseNewParams{
		Model: modelChat, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hej")},
		Instructions: openai.String("Svara kort."), MaxOutputTokens: openai.Int(16),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.ID == "" || len(res.Output) == 0 || res.OutputText() == "" {
		t.Fatalf("response: %+v", res)
	}
}

// POST /v1/responses on a chat-only route with translation enabled.
func TestEndpoints_Responses_TranslatedRoute(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	res, err := oa(t, s, a.Key).Responses.New(ctx(t), responses.ResponseNewParams{
		Model: modelTranslated, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hej")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.OutputText() == "" || res.Usage.InputTokens <= 0 {
		t.Fatalf("translated response: %+v", res)
	}
}

// POST /v1/responses: server-side state is refused (store, background, previous_response_id,
// conversation), as are hosted tools and remote files.
func TestEndpoints_Responses_StatefulAndHostedFeaturesRefused(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	base := func(k string, v any) map[string]any { return map[string]any{"model": modelChat, "input": "Hej", k: v} }
	for name, body := range map[string]map[string]any{
		"store":                base("store", true),
		"background":           base("background", true),
		"previous_response_id": base("previous_response_id", "resp_123"),
		"conversation":         base("conversation", "conv_123"),
		"hosted tool":          base("tools", []any{map[string]any{"type": "web_search"}}),
		"remote file": {"model": modelChat, "input": []any{map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "input_file", "file_url": "https://files.example.org/a.pdf"}}}}},
	} {
		r := s.Post(t, "/v1/responses", a.Key, body)
		if r.Status != 400 {
			t.Errorf("%s: %d %s", name, r.Status, r.Body)
		}
	}
	ok := s.Post(t, "/v1/responses", a.Key, map[string]any{"model": modelChat, "input": "Hej", "store": false,
		"tools": []any{map[string]any{"type": "function", "name": "lookup", "parameters": map[string]any{"type": "object"}}}})
	if ok.Status != 200 {
		t.Errorf("function tool: %d %s", ok.Status, ok.Body)
	}
}

// POST /v1/messages through the Messages SDK v1 (x-api-key) on a native route.
func TestEndpoints_Messages_AnthropicSDKv1(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	msg, err := av1(t, s, a.Key).Messages.New(ctx(t), anthropic.MessageNewParams{
		Model: anthropic.Model(modelChat), MaxTokens: 16,
		System:   []anthropic.TextBlockParam{{Text: "Svara kort."}},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hej"))},
	})
	if err != nil {
		t.Fatal(err)
	}
	if msg.ID == "" || len(msg.Content) == 0 || msg.Content[0].Text == "" || msg.Usage.InputTokens <= 0 {
		t.Fatalf("message: %+v", msg)
	}
}

// POST /v1/messages through the Messages SDK v2 (bearer) on a translated route.
func TestEndpoints_Messages_AnthropicSDKv2Translated(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	msg, err := av2(t, s, a.Key).Messages.New(ctx(t), anthropic2.MessageNewParams{
		Model: anthropic2.Model(modelTranslated), MaxTokens: 16,
		Messages: []anthropic2.MessageParam{anthropic2.NewUserMessage(anthropic2.NewTextBlock("Hej"))},
	})
	if err != nil {
		t.Fatal(err)
	}
	if msg.ID == "" || len(msg.Content) == 0 || msg.StopReason == "" {
		t.Fatalf("message: %+v", msg)
	}
}

// POST /v1/messages: max_tokens is required.
func TestEndpoints_Messages_MaxTokensRequired(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	e := wantError(t, s.Post(t, "/v1/messages", a.Key, chatReq(modelChat)), 400, "")
	if e.Type != "error" {
		t.Errorf("Messages-style error without top-level type error")
	}
}

// POST /v1/messages/count_tokens: a visible model gets 400 invalid_request_error.
func TestEndpoints_CountTokens_VisibleModelIs400(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	_, err := av1(t, s, a.Key).Messages.CountTokens(ctx(t), anthropic.MessageCountTokensParams{
		Model:    anthropic.Model(modelChat),
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hej"))},
	})
	var apiErr *anthropic.Error
	if err == nil || !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
		t.Fatalf("count_tokens: %v", err)
	}
	r := s.Post(t, "/v1/messages/count_tokens", a.Key, chatReq(modelChat))
	if e := wantError(t, r, 400, ""); e.Error.Type != "invalid_request_error" {
		t.Fatalf("type %q", e.Error.Type)
	}
	wantError(t, s.Post(t, "/v1/messages/count_tokens", a.Key, chatReq("no-such-model")), 404, "model_not_found")
}

// POST /v1/messages/count_tokens: never billed, yet a positive balance is required.
func TestEndpoints_CountTokens_NeedsPositiveBalanceNotBilled(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	broke := s.NewAccount(t, "se", 0, modelChat)
	wantError(t, s.Post(t, "/v1/messages/count_tokens", broke.Key, chatReq(modelChat)), 402, "insufficient_quota")
	a := s.NewAccount(t, "se", 100, modelChat)
	before := s.account(t, a)["balance_micro_sek"]
	r := s.Post(t, "/v1/messages/count_tokens", a.Key, chatReq(modelChat))
	wantError(t, r, 400, "")
	stillHolds(t, "count_tokens debits nothing", func() bool { return s.account(t, a)["balance_micro_sek"] == before })
	if after := s.account(t, a)["balance_micro_sek"]; after != before {
		t.Fatalf("count_tokens changed the balance: %v -> %v", before, after)
	}
}

// POST /v1/systemone: the decision model answers named questions.
func TestEndpoints_SystemOne_AnswersNamedQuestions(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	r := s.Post(t, "/v1/systemone", a.Key, map[string]any{"model": modelSystemOne, "state": "Kunden vill säga upp sitt avtal.",
		"questions": map[string]any{
			"intent": map[string]any{"type": "choice", "choices": []string{"cancel", "upgrade", "other"}},
			"urgent": map[string]any{"type": "noul"},
			"anger":  map[string]any{"type": "score"},
		}})
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	var res struct {
		Model   string
		Answers map[string]json.RawMessage
	}
	if err := json.Unmarshal(r.Body, &res); err != nil || res.Model == "" {
		t.Fatalf("%v %s", err, r.Body)
	}
	for _, q := range []string{"intent", "urgent", "anger"} {
		if _, ok := res.Answers[q]; !ok {
			t.Errorf("no answer to %s: %s", q, r.Body)
		}
	}
	// A chat model does not speak the decision protocol.
	wantError(t, s.Post(t, "/v1/systemone", a.Key, map[string]any{"model": modelChat, "state": "x",
		"questions": map[string]any{"q": map[string]any{"type": "noul"}}}), 400, "")
}

// GET /v1/service/account: balance and 30-day usage of the account.
func TestEndpoints_Account_BalanceAndUsage(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	a := s.NewAccount(t, "eu", 250, modelChat)
	acct := s.account(t, a)
	if acct["customer"] != t.Name() || acct["residency"] != "eu" || acct["balance_sek"] != "250.00" ||
		acct["balance_micro_sek"] != float64(250_000_000) {
		t.Fatalf("account: %v", acct)
	}
	r := s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat))
	rec := s.waitRecord(t, a, r.Header.Get("X-Request-Id"))
	var usage []map[string]any
	s.waitFor(t, "usage_30d", func() bool {
		acct = s.account(t, a)
		raw, _ := json.Marshal(acct["usage_30d"])
		return json.Unmarshal(raw, &usage) == nil && len(usage) == 1
	})
	if usage[0]["price_micro_sek"] != float64(rec.PriceMicroSEK) {
		t.Errorf("usage_30d %v, record price %d", usage, rec.PriceMicroSEK)
	}
	if got := acct["balance_micro_sek"].(float64); got != float64(250_000_000-rec.PriceMicroSEK) {
		t.Errorf("balance %v after a request of %d micro-SEK", got, rec.PriceMicroSEK)
	}
}

// GET /v1/service/requests: newest first, for all keys of the account.
func TestEndpoints_Requests_NewestFirstAcrossKeys(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	a := s.NewAccount(t, "se", 100, modelChat)
	b := s.NewKey(t, a.ID, nil)
	first := s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat)).Header.Get("X-Request-Id")
	s.waitRecord(t, a, first)
	second := s.Post(t, "/v1/chat/completions", b.Key, chatReq(modelChat)).Header.Get("X-Request-Id")
	s.waitRecord(t, a, second)
	recs, _ := s.listRecords(t, a, "")
	if len(recs) != 2 || recs[0].RequestID != second || recs[1].RequestID != first {
		t.Fatalf("records %+v", recs)
	}
	if recs[0].KeyID == nil || *recs[0].KeyID != b.KeyID || recs[1].KeyID == nil || *recs[1].KeyID != a.KeyID {
		t.Errorf("key IDs of records: %v %v", recs[0].KeyID, recs[1].KeyID)
	}
	// key_id narrows to one key.
	only, _ := s.listRecords(t, a, "?key_id="+b.KeyID)
	if len(only) != 1 || only[0].RequestID != second {
		t.Errorf("key_id filter: %+v", only)
	}
}

// GET /v1/service/requests: another account's key ID gives an empty list; a value that is
// not a key ID is 400.
func TestEndpoints_Requests_KeyIDFilter(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	a := s.NewAccount(t, "se", 100, modelChat)
	other := s.NewAccount(t, "se", 0, modelChat)
	s.waitRecord(t, a, s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat)).Header.Get("X-Request-Id"))
	recs, r := s.listRecords(t, a, "?key_id="+other.KeyID)
	if r.Status != 200 || len(recs) != 0 {
		t.Fatalf("other account's key: %d %s", r.Status, r.Body)
	}
	for _, bad := range []string{"key_XYZ", "abc", "key_0123456789abc"} {
		_, r := s.listRecords(t, a, "?key_id="+bad)
		wantError(t, r, 400, "")
	}
}

// GET /v1/service/requests/{id}: the record of a request; another account's ID and an
// unknown ID are both 404.
func TestEndpoints_RequestRecord_OtherAccountAndUnknownAre404(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	a := s.NewAccount(t, "se", 100, modelChat)
	other := s.NewAccount(t, "se", 100, modelChat)
	id := s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat)).Header.Get("X-Request-Id")
	rec := s.waitRecord(t, a, id)
	if rec.RequestID != id || rec.Model != modelChat || rec.Status != 200 {
		t.Fatalf("record %+v", rec)
	}
	wantError(t, s.Do(t, "GET", "/v1/service/requests/"+id, other.Key, nil, nil), 404, "")
	wantError(t, s.Do(t, "GET", "/v1/service/requests/req_01ARZ3NDEKTSV4RRFFQ69G5FAV", a.Key, nil, nil), 404, "")
	// An ID no record can have (invalid UTF-8, a lone surrogate's bytes, NUL) is 404 too,
	// never the database's message.
	for _, bad := range []string{"req_%FF%FE", "%ED%A0%80", "req_%00x"} {
		wantError(t, s.Do(t, "GET", "/v1/service/requests/"+bad, a.Key, nil, nil), 404, "request_not_found")
	}
}

// GET /v1/service/requests: pre-routing refusals are not recorded.
func TestEndpoints_Requests_PreRoutingRefusalsNotRecorded(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	a := s.NewAccount(t, "se", 100, modelChat)
	s.Post(t, "/v1/chat/completions", a.Key, map[string]any{"model": "no-such-model", "messages": []any{}})
	s.Post(t, "/v1/chat/completions", a.Key, map[string]any{"model": modelChat})
	s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelEmbed))
	ok := s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat)).Header.Get("X-Request-Id")
	s.waitRecord(t, a, ok)
	stillHolds(t, "no record of a refused request", func() bool { recs, _ := s.listRecords(t, a, ""); return len(recs) <= 1 })
	if recs, _ := s.listRecords(t, a, ""); len(recs) != 1 {
		t.Fatalf("%d records, want only the routed request", len(recs))
	}
}

// POST /v1/service/topup: 200 with the hosted checkout URL.
func TestEndpoints_Topup_ReturnsCheckoutURL(t *testing.T) {
	s, a := sharedAccount(t)
	t.Parallel()
	r := s.Post(t, "/v1/service/topup", a.Key, map[string]any{"amount_sek": 100})
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	u, err := url.Parse(fmt.Sprint(r.JSON(t)["url"]))
	if err != nil || !u.IsAbs() {
		t.Fatalf("url %v", r.JSON(t)["url"])
	}
}

// POST /v1/service/signup: 303 with Location; no account or key is created.
func TestEndpoints_Signup_RedirectsAndCreatesNoAccount(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	r := s.Do(t, "POST", "/v1/service/signup", "", form,
		[]byte("name=Ada+Lovelace&email=ada%40example.org&company=Analytical&residency=se&use_case=eval&consent=yes&website="))
	if r.Status != 303 || !strings.HasPrefix(r.Header.Get("Location"), s.ConfirmURL) {
		t.Fatalf("valid form: %d %q %s", r.Status, r.Header.Get("Location"), r.Body)
	}
	r = s.Do(t, "POST", "/v1/service/signup", "", form, []byte("name=Ada&email=not-an-email&consent=yes"))
	if r.Status != 303 || !strings.HasPrefix(r.Header.Get("Location"), s.ErrorURL) {
		t.Fatalf("invalid form: %d %q", r.Status, r.Header.Get("Location"))
	}
	list := s.Admin(t, "GET", "/admin/v1/accounts", nil)
	for _, acct := range list["data"].([]any) {
		if strings.Contains(fmt.Sprint(acct.(map[string]any)["customer"]), "Ada") {
			t.Fatalf("signup created an account: %v", acct)
		}
	}
}

// POST /v1/stripe/webhook: a signed paid checkout of a session the gateway created credits
// the account once; the same event for a session it did not create, or with another
// amount, credits nothing.
func TestEndpoints_Webhook_SignedEventCreditsOnce(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	a := s.NewAccount(t, "se", 0, modelChat)
	r := s.Post(t, "/v1/service/topup", a.Key, map[string]any{"amount_sek": 150})
	if r.Status != 200 {
		t.Fatalf("top-up: %d %s", r.Status, r.Body)
	}
	u, err := url.Parse(fmt.Sprint(r.JSON(t)["url"]))
	if err != nil {
		t.Fatal(err)
	}
	session := path.Base(u.Path) // the fake provider's URL ends in the session ID
	for _, refused := range [][]byte{
		checkoutEvent(t, "evt_foreign_"+a.KeyID, "cs_foreign_"+a.KeyID, a.ID, 15000, "paid"),
		checkoutEvent(t, "evt_more_"+a.KeyID, session, a.ID, 1500000, "paid"),
	} {
		r := s.Do(t, "POST", "/v1/stripe/webhook", "", map[string]string{"Payment-Signature": s.sign(t, refused)}, refused)
		if r.Status != 200 || r.JSON(t)["received"] != true {
			t.Fatalf("refused event: %d %s", r.Status, r.Body)
		}
	}
	if got := s.account(t, a)["balance_sek"]; got != "0.00" {
		t.Fatalf("balance %v after events for a foreign session and another amount", got)
	}
	event := checkoutEvent(t, "evt_once_"+a.KeyID, session, a.ID, 15000, "paid")
	for i := 0; i < 3; i++ {
		r := s.Do(t, "POST", "/v1/stripe/webhook", "", map[string]string{"Payment-Signature": s.sign(t, event)}, event)
		if r.Status != 200 || r.JSON(t)["received"] != true {
			t.Fatalf("delivery %d: %d %s", i, r.Status, r.Body)
		}
	}
	if got := s.account(t, a)["balance_sek"]; got != "150.00" {
		t.Fatalf("balance after three deliveries of one 150 SEK payment: %v", got)
	}
	// The credit reaches the node: inference is admitted.
	s.waitFor(t, "credit to reach the node", func() bool {
		return s.Post(t, "/v1/chat/completions", a.Key, chatReq(modelChat)).Status == 200
	})
}

// POST /v1/stripe/webhook: a bad signature is refused and nothing is applied.
func TestEndpoints_Webhook_BadSignatureRefused(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	a := s.NewAccount(t, "se", 0, modelChat)
	event := checkoutEvent(t, "evt_bad_"+a.KeyID, "cs_bad_"+a.KeyID, a.ID, 15000, "paid")
	for _, sig := range []string{"", "t=1,v1=00", s.sign(t, []byte(`{"id":"other"}`))} {
		wantError(t, s.Do(t, "POST", "/v1/stripe/webhook", "", map[string]string{"Payment-Signature": sig}, event), 400, "")
	}
	if got := s.account(t, a)["balance_sek"]; got != "0.00" {
		t.Fatalf("balance %v after refused events", got)
	}
}

// GET /openapi.json: the contract without authentication.
func TestEndpoints_OpenAPI_ServedWithoutAuth(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	r := s.Do(t, "GET", "/openapi.json", "", nil, nil)
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") || r.JSON(t)["openapi"] != "3.1.1" {
		t.Fatalf("%d %q", r.Status, r.Header.Get("Content-Type"))
	}
}

// GET /docs: 302 to the configured public reference.
func TestEndpoints_Docs_RedirectsToReference(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	r := s.Do(t, "GET", "/docs", "", nil, nil)
	if r.Status != 302 || r.Header.Get("Location") != s.DocsURL {
		t.Fatalf("%d %q", r.Status, r.Header.Get("Location"))
	}
}

// Unsupported families: 501 endpoint_not_supported with a documentation link, for every
// child path and method, without authentication.
func TestEndpoints_Unsupported_FamiliesAndChildrenAre501(t *testing.T) {
	s := getStack(t)
	t.Parallel()
	families := []string{"/v1/assistants", "/v1/audio", "/v1/batches", "/v1/containers", "/v1/conversations", "/v1/evals",
		"/v1/files", "/v1/fine_tuning", "/v1/images", "/v1/moderations", "/v1/organization", "/v1/projects",
		"/v1/realtime", "/v1/threads", "/v1/uploads", "/v1/vector_stores", "/v1/videos"}
	var paths []string
	for _, f := range families {
		paths = append(paths, f, f+"/abc", f+"/abc/def/ghi")
	}
	paths = append(paths, "/v1/responses/resp_1", "/v1/responses/resp_1/input_items", "/v1/responses/resp_1/cancel",
		"/v1/responses/input_tokens", "/v1/responses/compact", "/v1/chat/completions/chatcmpl_1",
		"/v1/chat/completions/chatcmpl_1/messages")
	for _, p := range paths {
		for _, m := range []string{"GET", "POST", "DELETE"} {
			e := wantError(t, s.Do(t, m, p, "", nil, []byte(`{"model":"`+modelChat+`"}`)), 501, "endpoint_not_supported")
			if e.DocumentationURL != s.DocsURL {
				t.Errorf("%s %s: documentation_url %q", m, p, e.DocumentationURL)
			}
		}
	}
}

// Unsupported families: nothing is forwarded, stored or billed, even with a valid key.
func TestEndpoints_Unsupported_NothingForwardedStoredOrBilled(t *testing.T) {
	s := getStack(t)
	a := s.NewAccount(t, "se", 100, modelChat)
	before := simStats(t, s).Requests
	for _, p := range []string{"/v1/files", "/v1/audio/speech", "/v1/images/generations", "/v1/chat/completions/x",
		"/v1/responses/resp_1", "/v1/batches"} {
		wantError(t, s.Post(t, p, a.Key, chatReq(modelChat)), 501, "endpoint_not_supported")
	}
	stillHolds(t, "nothing forwarded", func() bool { return simStats(t, s).Requests == before })
	if after := simStats(t, s).Requests; after != before {
		t.Errorf("the simulator saw %d requests", after-before)
	}
	if recs, _ := s.listRecords(t, a, ""); len(recs) != 0 {
		t.Errorf("%d records", len(recs))
	}
	if got := s.account(t, a)["balance_sek"]; got != "100.00" {
		t.Errorf("balance %v", got)
	}
}

// checkoutEvent is a checkout.session.completed event for an account.
func checkoutEvent(t testing.TB, eventID, sessionID, accountID string, amountOre int64, paymentStatus string) []byte {
	return mustJSON(map[string]any{
		"id": eventID, "object": "event", "type": "checkout.session.completed", "api_version": "2023-10-16",
		"created": time.Now().Unix(), "livemode": false,
		"data": map[string]any{"object": map[string]any{
			"id": sessionID, "object": "checkout.session", "mode": "payment", "currency": "sek",
			"amount_total": amountOre, "payment_status": paymentStatus, "status": "complete",
			"client_reference_id": accountID, "metadata": map[string]any{"account_id": accountID},
		}},
	})
}

// sign returns the Payment-Signature of a webhook body.
func (s *Stack) sign(t testing.TB, body []byte) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: s.WebhookKey, Timestamp: time.Now()}).Header
}
