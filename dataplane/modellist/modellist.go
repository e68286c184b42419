// Package modellist renders the models an account sees in the interface's /v1/models
// shape.
package modellist

import "github.com/sekgate/gateway/dataplane/index"

// Pricing is a model's price, in öre per million tokens.
type Pricing struct {
	Currency  string `json:"currency"`
	InputOre  int64  `json:"input_ore_per_million_tokens"`
	OutputOre int64  `json:"output_ore_per_million_tokens"`
}

// ModelJSON is one model of /v1/models.
type ModelJSON struct {
	ID            string   `json:"id"`
	Object        string   `json:"object"`
	Created       int64    `json:"created"`
	OwnedBy       string   `json:"owned_by"`
	Aliases       []string `json:"aliases"`
	Endpoint      string   `json:"endpoint"`
	Endpoints     []string `json:"endpoints"`
	Pricing       Pricing  `json:"pricing"`
	ContextTokens int64    `json:"context_tokens,omitempty"`
	Tokenizer     string   `json:"tokenizer,omitempty"`
}

// ServiceNote tells a client why a list is empty.
type ServiceNote struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ListJSON is /v1/models.
type ListJSON struct {
	Object  string       `json:"object"`
	Data    []ModelJSON  `json:"data"`
	Service *ServiceNote `json:"service,omitempty"`
}

// Model renders m as an account of residency policy sees it.
func Model(m *index.Model, policy string) ModelJSON {
	aliases := m.Aliases
	if aliases == nil {
		aliases = []string{}
	}
	eps := m.Endpoints(policy)
	if eps == nil {
		eps = []string{}
	}
	return ModelJSON{
		ID: m.ID, Object: "model", Created: max(m.Created, 0), OwnedBy: "service", Aliases: aliases,
		Endpoint: m.Endpoint, Endpoints: eps,
		Pricing:       Pricing{Currency: "SEK", InputOre: m.InputOrePerMillion, OutputOre: m.OutputOrePerMillion},
		ContextTokens: max(m.ContextTokens, 0), Tokenizer: m.Tokenizer,
	}
}

// Of is the list of the models acct sees, with a note when there are none.
func Of(acct *index.Account) ListJSON {
	out := ListJSON{Object: "list", Data: make([]ModelJSON, 0, len(acct.Visible))}
	for _, m := range acct.Visible {
		out.Data = append(out.Data, Model(m, acct.Residency))
	}
	if len(out.Data) == 0 {
		out.Service = &ServiceNote{Code: "no_models_available",
			Message: "no model is enabled for this account under its residency policy; ask the operator to enable one"}
	}
	return out
}
