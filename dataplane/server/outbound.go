package server

import (
	"strconv"

	"github.com/sekgate/gateway/dataplane/reqparse"
	"github.com/sekgate/gateway/dataplane/tokens"
	"github.com/sekgate/gateway/shared/apierror"
	"github.com/sekgate/gateway/shared/usage"
)

// recordBoundError refuses a generation request whose output bound (its choices times its
// output limit, or the model's window without one) is over what one record may hold
// (usage.MaxRecordTokens): the control plane would refuse its record, and it would be served
// without a charge.
func recordBoundError(req *reqparse.Request, window int64) *apierror.Error {
	b := tokens.NewBounds(window, req.MaxTokens, 1)
	n := max(1, req.Choices)
	if b.WithChoices(n).Output <= usage.MaxRecordTokens {
		return nil
	}
	param := "max_tokens"
	if req.Choices > 1 {
		param = "n"
	}
	return apierror.InvalidParam(param, "the number of choices ("+strconv.FormatInt(n, 10)+") times the output limit ("+
		strconv.FormatInt(b.Output, 10)+" tokens) is over "+strconv.FormatInt(usage.MaxRecordTokens, 10)+
		" tokens, the most one request may generate; set a lower max_tokens or n")
}

// overBoundOutput is the output charged for a non-streaming answer whose reported output is
// over the request's bound (a server that read a length field of its own): what it reports,
// up to what the answer holds (the larger of the bound and the estimate of its text), and
// never over what one record may hold.
func overBoundOutput(reported, bound, estimate int64) int64 {
	return min(reported, max(bound, estimate), usage.MaxRecordTokens)
}
