package fleetshare

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/sekgate/gateway/dataplane/cplink"
	"github.com/sekgate/gateway/shared/internalapi"
)

// LinkPoster posts reports over the node's link to its control plane.
type LinkPoster struct {
	Link   *cplink.Client
	Client *http.Client // on the link's transport (Link.HTTPClient)
}

// answerLimit bounds an answer (shares of up to MaxFleetEntries keys and accounts).
const answerLimit = 16 << 20

// Post sends r and decodes the answer; an answer other than 200 is an error.
func (p *LinkPoster) Post(ctx context.Context, r internalapi.FleetReport) (internalapi.FleetAnswer, error) {
	var a internalapi.FleetAnswer
	body, err := json.Marshal(r)
	if err != nil {
		return a, fmt.Errorf("fleetshare: encode report: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.Link.URL(internalapi.PathFleet), bytes.NewReader(body))
	if err != nil {
		return a, fmt.Errorf("fleetshare: %w", err)
	}
	p.Link.Authorize(req.Header)
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.Client.Do(req)
	if err != nil {
		return a, fmt.Errorf("fleetshare: post report: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return a, fmt.Errorf("fleetshare: control plane answered %d", resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, answerLimit)).Decode(&a); err != nil {
		return a, fmt.Errorf("fleetshare: decode answer: %w", err)
	}
	return a, nil
}
