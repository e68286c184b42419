package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/sekgate/gateway/controlplane/adminapi"
	"github.com/sekgate/gateway/shared/apierror"
)

// TestBox sends a chat completion request on behalf of an account to a data plane, which
// serves, records and charges it like any other; its record carries key_id null.
type TestBox interface {
	Chat(ctx context.Context, accountID string, body []byte) (adminapi.TestBoxResult, error)
}

// testBox is POST /admin/v1/accounts/{id}/test-box {model, message, max_tokens}.
func (s *server) testBox(w http.ResponseWriter, r *http.Request) {
	var in adminapi.TestBoxRequest
	if !decodeJSON(w, r, 64<<10, &in) {
		return
	}
	in.Model = strings.TrimSpace(in.Model)
	if in.Model == "" || !validText(in.Model, 200) {
		writeError(w, invalid("model", "model is required."))
		return
	}
	if in.Message == "" || !validText(in.Message, 16000) {
		writeError(w, invalid("message", "message is required (at most 16000 characters)."))
		return
	}
	if in.MaxTokens == 0 {
		in.MaxTokens = 64
	}
	if in.MaxTokens < 1 || in.MaxTokens > 4096 {
		writeError(w, invalid("max_tokens", "max_tokens must be from 1 to 4096."))
		return
	}
	a, err := s.cfg.Store.GetAccount(r.Context(), r.PathValue("id"))
	if err != nil {
		s.storeError(w, r, err, "account")
		return
	}
	body, _ := json.Marshal(map[string]any{"model": in.Model, "max_tokens": in.MaxTokens,
		"messages": []map[string]string{{"role": "user", "content": in.Message}}})
	res, err := s.cfg.TestBox.Chat(r.Context(), a.ID, body)
	if err != nil {
		s.log.Warn("test box", "account", a.ID, "err", err)
		writeError(w, apierror.New(http.StatusBadGateway, apierror.TypeUpstream, "test_box_unreachable",
			"The data plane did not answer the test-box request: "+err.Error()))
		return
	}
	writeJSON(w, http.StatusOK, res)
}
