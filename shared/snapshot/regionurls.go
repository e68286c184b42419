package snapshot

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/sekgate/gateway/shared/residency"
)

// ParseRegionURLs parses a comma-separated list of policy=base URL (se=https://se.example.com,
// eu=...), the form of the planes' --region-urls flags. Empty input is an empty map.
func ParseRegionURLs(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		p, u, ok := strings.Cut(item, "=")
		if !ok || !residency.Valid(p) {
			return nil, fmt.Errorf("%q is not policy=URL with policy se, eu or any", item)
		}
		if _, dup := out[p]; dup {
			return nil, fmt.Errorf("policy %s is given twice", p)
		}
		if err := checkRegionURL(u); err != nil {
			return nil, err
		}
		out[p] = u
	}
	return out, nil
}

// CheckRegionURLs reports the first entry of m that is not a known policy mapped to an
// absolute http(s) URL (what ParseRegionURLs admits).
func CheckRegionURLs(m map[string]string) error {
	for p, u := range m {
		if !residency.Valid(p) {
			return fmt.Errorf("region URL for unknown policy %q", p)
		}
		if err := checkRegionURL(u); err != nil {
			return err
		}
	}
	return nil
}

func checkRegionURL(u string) error {
	pu, err := url.Parse(u)
	if err != nil || (pu.Scheme != "https" && pu.Scheme != "http") || pu.Host == "" || pu.User != nil ||
		len(u) > 2048 || strings.ContainsAny(u, " \t\r\n\"<>\\") {
		return fmt.Errorf("%q is not an absolute http(s) URL", u)
	}
	return nil
}
