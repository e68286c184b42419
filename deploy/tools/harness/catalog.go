package harness

// SimModel is a chat model (/v1/chat/completions, word tokenizer) with one route to a
// provider simulator in Sweden.
type SimModel struct {
	ID string
	// RouteID names its route.
	RouteID string
	// Upstream is the simulator's host:port.
	Upstream string
	// InOre and OutOre are the prices in öre per million tokens.
	InOre, OutOre int
	// ContextTokens is the context window.
	ContextTokens int
	// MaxConns caps the route's connections (0: the catalogue's default, field left out).
	MaxConns int
	// IdleTimeoutMS and TotalTimeoutMS bound the route's answers.
	IdleTimeoutMS, TotalTimeoutMS int
}

// Catalog returns the admin API's catalogue document with the given models.
func Catalog(models ...SimModel) map[string]any {
	list := make([]map[string]any, 0, len(models))
	for _, m := range models {
		route := map[string]any{
			"id": m.RouteID, "provider": "simulator", "base_url": "http://" + m.Upstream + "/v1",
			"protocols": []string{"/v1/chat/completions"}, "translate": false,
			"region": "se-local", "country": "SE", "priority": 0, "weight": 1,
			"idle_timeout_ms": m.IdleTimeoutMS, "total_timeout_ms": m.TotalTimeoutMS,
		}
		if m.MaxConns > 0 {
			route["max_conns"] = m.MaxConns
		}
		list = append(list, map[string]any{
			"id": m.ID, "aliases": []string{}, "endpoint": "/v1/chat/completions", "created": 1735689600,
			"context_tokens": m.ContextTokens, "tokenizer": "words",
			"input_ore_per_million_tokens": m.InOre, "output_ore_per_million_tokens": m.OutOre,
			"routes": []map[string]any{route},
		})
	}
	return map[string]any{"models": list}
}
