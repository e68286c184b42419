package plan

import (
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/reqparse"
	"github.com/sekgate/gateway/shared/apierror"
)

// valueCandidates keeps the candidates that may serve req when it uses remote media or
// provider extensions (reqparse records both; routes opt in with allow_remote_media and
// allow_extensions). When none may, the request is refused with 400 naming the param: the
// remote media part when no candidate fetches remote media, else the first extension no
// candidate allows, else (each is allowed somewhere but never together) the remote media
// part or the first extension. Requests using neither, and models without candidates (the
// forwarder answers those), pass unchanged and without allocating.
func valueCandidates(cands []index.Candidate, req *reqparse.Request) ([]index.Candidate, *apierror.Error) {
	remote := req.RemoteMedia != ""
	if !remote && req.ExtensionMask == 0 || len(cands) == 0 {
		return cands, nil
	}
	var out []index.Candidate
	for _, c := range cands {
		if c.Route.Accepts(remote, req.ExtensionMask) {
			out = append(out, c)
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	if remote && !anyCandidate(cands, func(r *index.Route) bool { return r.AllowRemoteMedia }) {
		return nil, reqparse.RemoteMediaError(req.RemoteMedia)
	}
	for _, e := range req.Extensions {
		bit := uint32(1) << e.Index
		if !anyCandidate(cands, func(r *index.Route) bool { return r.AllowsExtensions(bit) }) {
			return nil, reqparse.ExtensionError(e)
		}
	}
	if remote {
		return nil, reqparse.RemoteMediaError(req.RemoteMedia)
	}
	return nil, reqparse.ExtensionError(req.Extensions[0])
}

func anyCandidate(cands []index.Candidate, ok func(*index.Route) bool) bool {
	for _, c := range cands {
		if ok(c.Route) {
			return true
		}
	}
	return false
}
