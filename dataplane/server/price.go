package server

import (
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/shared/money"
)

// priceOf is the data plane's one pricing rule for a record of model m, used for the final
// record and a stream's start entry alike: shared/money's rule (the control plane re-checks
// every record with the same one), with embeddings billing their input only. It returns the
// billed output tokens, the price and the price's input side.
func priceOf(m *index.Model, endpoint string, prompt, completion int64) (billedOut, total, input int64) {
	if endpoint == index.EPEmbeddings.Path() {
		completion = 0
	}
	total, input = money.PriceParts(prompt, completion, m.InputOrePerMillion, m.OutputOrePerMillion)
	return completion, total, input
}
