package main

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseRegionURLs(t *testing.T) {
	tests := []struct {
		in      string
		want    map[string]string
		wantErr bool
	}{
		{"", map[string]string{}, false},
		{"se=https://se.example.com, eu=https://eu.example.com", map[string]string{"se": "https://se.example.com", "eu": "https://eu.example.com"}, false},
		{"any=http://127.0.0.1:8280", map[string]string{"any": "http://127.0.0.1:8280"}, false},
		{"us=https://us.example.com", nil, true},
		{"se", nil, true},
		{"se=/relative", nil, true},
		{"se=ftp://x", nil, true},
	}
	for _, tt := range tests {
		got, err := parseRegionURLs(tt.in)
		if (err != nil) != tt.wantErr || (!tt.wantErr && !reflect.DeepEqual(got, tt.want)) {
			t.Errorf("parseRegionURLs(%q) = %v, %v", tt.in, got, err)
		}
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
