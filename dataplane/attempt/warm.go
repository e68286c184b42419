package attempt

import (
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/plan"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/dataplane/routing"
)

// warm sends the copy of c the routing decision asked for (routing.Warm: one output
// token, not streamed) to the key's other home in the background, and tells the selector
// when it is over. The copy's body is built here, before c's buffers go back to their
// pools; nothing of it is charged, recorded or relayed.
func (r *Runner) warm(c *plan.Call, w routing.Warm, requestID string) {
	rt := w.Cand.Route
	ue := plan.UpstreamEndpoint(c.Endpoint, w.Cand)
	body, berr := c.UpstreamBody(w.Cand)
	if berr == nil {
		body, berr = c.Salted(body, ue, r.cfg.Dialects.Of(rt))
	}
	var ok bool
	if berr == nil {
		body, ok = proxy.WarmBody(body, ue)
	}
	if !ok || !r.cfg.Health.Closed(rt) {
		r.cfg.Selector.Warmed(w, false, r.cfg.Now().UnixNano())
		return
	}
	ld := r.routeLoad(rt) // its slot counts in the route's load while it runs
	up := r.cfg.Pool.For(rt)
	req := fasthttp.AcquireRequest()
	up.Prepare(req, rt, ue, body, requestID+".warm", false)
	go func() {
		resp := fasthttp.AcquireResponse()
		var call proxy.Call
		err := up.Do(req, resp, false, time.Now().Add(up.TotalTimeout()), &call) // the network's clock
		ok := err == nil && resp.StatusCode() == fasthttp.StatusOK
		call.Done()
		fasthttp.ReleaseRequest(req)
		fasthttp.ReleaseResponse(resp)
		if ld != nil {
			ld.Done()
		}
		r.slotFreed()
		r.cfg.Telemetry.Warmup(rt.Provider, ok)
		r.cfg.Selector.Warmed(w, ok, r.cfg.Now().UnixNano())
	}()
}
