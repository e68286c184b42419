package snapshot

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
		{"se=https://a.example,se=https://b.example", nil, true},
		{"se=https://user:pw@se.example", nil, true},
		{"se=https://se.example/\"><script>", nil, true},
	}
	for _, tt := range tests {
		got, err := ParseRegionURLs(tt.in)
		if (err != nil) != tt.wantErr || (!tt.wantErr && !reflect.DeepEqual(got, tt.want)) {
			t.Errorf("ParseRegionURLs(%q) = %v, %v", tt.in, got, err)
		}
		if err == nil && CheckRegionURLs(got) != nil {
			t.Errorf("CheckRegionURLs refuses what ParseRegionURLs(%q) gave", tt.in)
		}
	}
	if CheckRegionURLs(map[string]string{"mars": "https://x.example"}) == nil || CheckRegionURLs(map[string]string{"se": "x"}) == nil {
		t.Error("CheckRegionURLs admitted a bad entry")
	}
}

// FuzzParseRegionURLs: whatever the flag holds, what is admitted passes CheckRegionURLs.
func FuzzParseRegionURLs(f *testing.F) {
	for _, s := range []string{"", "se=https://se.example", "se=,eu=http://[::1]:1", "any=http://%zz", "eu=https://a b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseRegionURLs(s)
		if err != nil {
			return
		}
		if err := CheckRegionURLs(m); err != nil {
			t.Fatalf("ParseRegionURLs(%q) admitted %v: %v", s, m, err)
		}
	})
}
