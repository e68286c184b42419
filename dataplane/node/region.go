package node

import (
	"fmt"

	"github.com/sekgate/gateway/shared/internalapi"
	"github.com/sekgate/gateway/shared/residency"
	"github.com/sekgate/gateway/shared/snapshot"
)

// regionOptions is where the node runs: accounts whose residency policy does not
// admit its country are refused, pointed at the region that serves them.
type regionOptions struct {
	Region  string `flag:"region" help:"name of where this node runs (e.g. se-sto), recorded as node_region (empty: none)"`
	Country string `flag:"country" help:"ISO 3166-1 alpha-2 country this node runs in (empty: every account admitted)"`
	URLs    string `flag:"region-urls" help:"policy=base URL pairs named in residency refusals (empty: the control plane's)"`
}

// validate checks --country and --region before anything starts.
func (r *regionOptions) validate() error {
	if !residency.ValidCountry(r.Country) {
		return fmt.Errorf("--country %q is not an ISO 3166-1 alpha-2 country code in upper case (e.g. SE, DE, US)", r.Country)
	}
	if !internalapi.ValidRegion(r.Region) {
		return fmt.Errorf("--region %q is not 1 to 63 lower-case letters, digits and inner '-' (e.g. se-sto)", r.Region)
	}
	return nil
}

// parseRegionURLs parses --region-urls.
func parseRegionURLs(s string) (map[string]string, error) {
	m, err := snapshot.ParseRegionURLs(s)
	if err != nil {
		return nil, fmt.Errorf("--region-urls: %w", err)
	}
	return m, nil
}
