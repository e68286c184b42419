package plan

import (
	"errors"
	"strconv"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/sekgate/gateway/dataplane/admit"
	"github.com/sekgate/gateway/dataplane/dialect"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/outcome"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/dataplane/reqparse"
	"github.com/sekgate/gateway/dataplane/routing"
	"github.com/sekgate/gateway/dataplane/tokens"
	"github.com/sekgate/gateway/dataplane/translate"
	"github.com/sekgate/gateway/shared/apierror"
	"github.com/sekgate/gateway/shared/usage"
)

// Call describes one inference request to the stages after it (admit, attempt, relay). Every
// inference handler, translated protocols included, makes one (Make).
type Call struct {
	P     admit.Principal
	Model *index.Model
	// e is the endpoint the client called (the record's endpoint).
	Endpoint index.Endpoint
	// cands are the routes eligible for the request: m.Candidates(policy, e), i.e. already
	// inside the account's residency policy and speaking the protocol (natively or by
	// translation). The attempts only order and skip them; they never add routes.
	Cands []index.Candidate
	// stream asks for a server-sent event answer.
	Stream bool
	// includeUsage: the client asked for the stream's usage chunk; otherwise the gateway
	// asks for it on the client's behalf and a same-protocol relay drops it.
	IncludeUsage bool
	Start        time.Time
	// raw is the client's body and sentModel the model name in it: without body, each
	// attempt sends raw with proxy.RewriteBody's edits (the route's upstream model name,
	// stream usage), the same-protocol pass-through.
	Raw       []byte
	SentModel string
	// body, when set, builds the upstream request body for candidate c instead, once per
	// attempt (translation: another protocol and model name per route). It may return the
	// same slice each time. An error is the client's answer (nothing is forwarded, no
	// other route is tried).
	Body func(c index.Candidate) ([]byte, *apierror.Error)
	// bounds are the most usage an answer can report (tokens.Bounds: the model's context
	// window, the request's output limit); promptEstimate is the node's low estimate of the
	// prompt's tokens, charged when a started stream ends before the provider reported usage.
	Bounds         tokens.Bounds
	PromptEstimate int64
	// lengthBound is the output bound per choice that every length field of a forwarded
	// body is brought within (proxy.BoundLengths; 0: no edit); editLengths says the body
	// has such fields besides max_tokens (reqparse.Request.LengthFields).
	LengthBound int64
	EditLengths bool
	// key is the request's prefix key (routing.PrefixKey), hasKey whether it has one,
	// prefixBytes the size it was taken from.
	Key         uint64
	HasKey      bool
	PrefixBytes int
	// salt is the cache_salt sent to servers that honour one: the account's, on a model
	// with account cache isolation; empty otherwise (cachesalt.go).
	Salt string
}

// UpstreamBody returns the body of an attempt on cand.
func (c *Call) UpstreamBody(cand index.Candidate) ([]byte, *apierror.Error) {
	if c.Body != nil {
		return c.Body(cand)
	}
	// Only chat and text completions streams have stream_options.include_usage; the
	// other protocols report usage in their streams anyway.
	usageOpt := c.Stream && (c.Endpoint == index.EPChat || c.Endpoint == index.EPCompletions)
	out, err := proxy.RewriteBody(c.Raw, c.SentModel, cand.Route.UpstreamModel, usageOpt, c.IncludeUsage,
		usageOpt && cand.Route.ContinuousUsageStats)
	if err == nil && c.EditLengths {
		out, err = proxy.BoundLengths(out, c.LengthBound)
	}
	if err != nil {
		return nil, outcome.ErrBodyEdit
	}
	return out, nil
}

// UpstreamEndpoint is the endpoint a candidate is called on.
func UpstreamEndpoint(e index.Endpoint, c index.Candidate) index.Endpoint {
	if c.Translate {
		return index.EPChat
	}
	return e
}

// Generates reports whether e produces tokens under an output limit (max_tokens).
func Generates(e index.Endpoint) bool {
	return e == index.EPChat || e == index.EPCompletions || e == index.EPMessages || e == index.EPResponses
}

// Resolve finds the visible model a request names.
func Resolve(p admit.Principal, name string) (*index.Model, bool) {
	m, ok := p.Idx.Model(name)
	if !ok {
		return nil, false
	}
	_, ok = p.Acct.VisibleModel(m.ID)
	return m, ok
}

// Make plans request req of p on endpoint e (body: its bytes, arrived at start) into c:
// the visible model it names, its bounds within the model's window, the routes that may
// serve it (inside the account's residency policy, speaking the protocol natively or by
// translation, allowing what the request carries), and its prefix key. A request that
// cannot be served gets its answer.
func (c *Call) Make(p admit.Principal, e index.Endpoint, req *reqparse.Request, body []byte, start time.Time) *apierror.Error {
	m, ok := Resolve(p, req.Model)
	if !ok {
		return ModelNotFound(p, req.Model)
	}
	if Generates(e) {
		// Prompt plus output must fit the model's context window (generation endpoints).
		if cerr := reqparse.CheckContext(*req, m.ContextTokens); cerr != nil {
			return cerr
		}
		if berr := recordBoundError(req, m.ContextTokens); berr != nil {
			return berr
		}
	}
	all := m.Candidates(p.Acct.Residency, e)
	if len(all) == 0 {
		return WrongEndpoint(p, m, e)
	}
	// Remote media and provider extensions narrow the routes to those that allow them.
	cands, verr := valueCandidates(all, req)
	if verr != nil {
		return verr
	}
	*c = newCall(p, m, e, cands, req, body, start)
	return nil
}

func newCall(p admit.Principal, m *index.Model, e index.Endpoint, cands []index.Candidate, req *reqparse.Request, body []byte, start time.Time) Call {
	c := Call{P: p, Model: m, Endpoint: e, Cands: cands,
		Stream: req.Stream, IncludeUsage: req.IncludeUsage, Start: start, Raw: body, SentModel: req.Model}
	inputs := 1
	if e == index.EPEmbeddings || e == index.EPSystemOne {
		inputs = req.InputCount // embedded or answered one by one, each within the window
	}
	perChoice := tokens.NewBounds(m.ContextTokens, req.MaxTokens, inputs)
	c.Bounds = perChoice.WithChoices(max(1, req.Choices))
	if Generates(e) {
		c.LengthBound = perChoice.Output
		c.EditLengths = req.LengthFields
	}
	c.PromptEstimate = min(req.EstimatedPromptTokens(), c.Bounds.Prompt)
	tenant, salt := callTenant(p, m)
	c.Salt = salt
	if routing.ModeOf(m.Routing) != routing.ModeWeighted {
		c.Key, c.HasKey = routing.PrefixKey(m.ID, tenant, req.CacheKey.In(body), req.Prefix.In(body))
		c.PrefixBytes = int(req.Prefix.Len)
		if req.CacheKey.Len > 0 {
			c.PrefixBytes = routing.FullAffinityBytes
		}
	}
	return c
}

// NativeCandidates returns the candidates that need no translation, without copying when
// there are none to drop (the common case).
func NativeCandidates(cands []index.Candidate) []index.Candidate {
	for i, c := range cands {
		if c.Translate {
			native := make([]index.Candidate, i, len(cands))
			copy(native, cands[:i])
			for _, c := range cands[i:] {
				if !c.Translate {
					native = append(native, c)
				}
			}
			return native
		}
	}
	return cands
}

// TranslatingBody returns the per-attempt body builder of c: native candidates get the
// client's body with the route's model name; translated ones a chat completions request,
// built once per upstream model name.
func TranslatingBody(c *Call, dialectOf func(*index.Route) *dialect.Dialect) func(index.Candidate) ([]byte, *apierror.Error) {
	// The last translated body, by upstream model name and whether it asks for running
	// usage (one variable: one allocation for the closure's state).
	var last struct {
		model      string
		continuous bool
		server     *dialect.Dialect
		body       []byte
	}
	return func(cand index.Candidate) ([]byte, *apierror.Error) {
		r := cand.Route
		if !cand.Translate {
			out, err := proxy.RewriteBody(c.Raw, c.SentModel, r.UpstreamModel, false, false, false)
			if err == nil && c.EditLengths {
				out, err = proxy.BoundLengths(out, c.LengthBound) // outbound.go
			}
			if err != nil {
				return nil, outcome.ErrBodyEdit
			}
			return out, nil
		}
		continuous := c.Stream && r.ContinuousUsageStats
		d := dialectOf(r)
		if last.body != nil && last.model == r.UpstreamModel && last.continuous == continuous && last.server == d {
			return last.body, nil
		}
		var (
			out []byte
			err error
		)
		switch c.Endpoint {
		case index.EPMessages:
			out, err = translate.MessagesToChatWith(c.Raw, r.UpstreamModel, translate.Options{Dialect: d})
		case index.EPResponses:
			out, err = translate.ResponsesToChatWith(c.Raw, r.UpstreamModel, translate.Options{Dialect: d})
		default:
			return nil, ErrUnsupportedProtocol
		}
		if err != nil {
			return nil, translateRequestError(err)
		}
		if continuous {
			if out, err = sjson.SetBytes(out, "stream_options.continuous_usage_stats", true); err != nil {
				return nil, outcome.ErrBodyEdit
			}
		}
		last.model, last.continuous, last.server, last.body = r.UpstreamModel, continuous, d, out
		return out, nil
	}
}

// translateRequestError maps a request translator's error to the client's 400.
func translateRequestError(err error) *apierror.Error {
	if errors.Is(err, translate.ErrUnsupported) {
		return apierror.New(400, apierror.TypeInvalidRequest, apierror.CodeUnsupportedProtocol,
			"this model's routes serve the request through chat completions, which cannot express it: "+err.Error())
	}
	return apierror.InvalidParam("", "request body cannot be translated for the upstream: "+err.Error())
}

// TranslateOptions are the options of a request translated onto route r: r's dialect and
// the request's stop sequences (Messages-style stop_sequences).
func TranslateOptions(c *Call, d *dialect.Dialect) translate.Options {
	o := translate.Options{Dialect: d}
	if c.Endpoint == index.EPMessages {
		gjson.GetBytes(c.Raw, "stop_sequences").ForEach(func(_, v gjson.Result) bool {
			if v.Type == gjson.String {
				o.Stops = append(o.Stops, v.Str)
			}
			return true
		})
	}
	return o
}

// ClientAskedRunningUsage reports whether a chat request asks for the route's running usage itself.
func ClientAskedRunningUsage(body []byte) bool {
	return gjson.GetBytes(body, "stream_options.continuous_usage_stats").Type == gjson.True
}

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
