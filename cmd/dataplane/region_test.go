package main

import (
	"reflect"
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
