package internalapi

// PathRefusals: POST a RefusalReport, answered 204 once stored. A node sends the refusals it
// answered after authentication and before routing (402, 403, 404, 413, 429, …), which
// never become request records, so that operators can answer "why does my customer get
// 402?" without the node's logs. Counts are diagnostics, not money: a report lost with a
// node is acceptable.
const PathRefusals = "/internal/v1/refusals"

// MaxRefusalEntries bounds the entries of one report.
const MaxRefusalEntries = 10_000

// RefusalReport is what one node refused since its last report.
type RefusalReport struct {
	Entries []RefusalCount `json:"entries"`
}

// RefusalCount is how often one account's key got one answer on one UTC day.
type RefusalCount struct {
	Day       string `json:"day"` // YYYY-MM-DD, UTC
	AccountID string `json:"account_id"`
	KeyID     string `json:"key_id"` // empty: not a key's request (none so far)
	Status    int    `json:"status"`
	Code      string `json:"code"` // the error envelope's code; empty when it had none
	Count     int64  `json:"count"`
}
