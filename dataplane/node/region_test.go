package node

import (
	"reflect"
	"strings"
	"testing"
)

// The value's rules are shared/snapshot's (ParseRegionURLs, tested there); the flag names
// itself in the error.
func TestParseRegionURLs(t *testing.T) {
	got, err := parseRegionURLs("se=https://se.example.com")
	if err != nil || !reflect.DeepEqual(got, map[string]string{"se": "https://se.example.com"}) {
		t.Errorf("parseRegionURLs = %v, %v", got, err)
	}
	if _, err := parseRegionURLs("se=ftp://x"); err == nil || !strings.HasPrefix(err.Error(), "--region-urls: ") {
		t.Errorf("bad value: %v, want an error naming --region-urls", err)
	}
}

func TestRegionFlagsValidated(t *testing.T) {
	base := []string{"--node-token", testNodeToken, "--insecure-unsigned-snapshots"}
	for _, ok := range [][]string{{}, {"--country", "SE", "--region", "se-sto"}, {"--country", "US"}} {
		if _, err := parseFlags(append(base, ok...)); err != nil {
			t.Errorf("%v refused: %v", ok, err)
		}
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--country", "se"}, `--country "se" is not an ISO 3166-1 alpha-2 country code`},
		{[]string{"--country", "EU"}, `--country "EU"`},
		{[]string{"--country", "SWE"}, `--country "SWE"`},
		{[]string{"--region", "SE-STO"}, `--region "SE-STO" is not 1 to 63 lower-case letters`},
		{[]string{"--region", "se_sto"}, `--region "se_sto"`},
	} {
		_, err := parseFlags(append(base, bad.args...))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: error %v, want it to contain %q", bad.args, err, bad.want)
		}
	}
}
