package testbox

import "testing"

// TestNewURL: the test-box token goes with every request, so the URL must be https, or
// plain http only to a loopback address.
func TestNewURL(t *testing.T) {
	const tok = "test-box-token-0123456789abcdef01234"
	for _, c := range []struct {
		url string
		ok  bool
	}{
		{"https://dp.internal:9110", true},
		{"http://127.0.0.1:9110", true},
		{"http://127.8.9.1:9110/", true},
		{"http://[::1]:9110", true},
		{"http://localhost:9110", true},
		{"http://10.1.2.3:9110", false},
		{"http://dp.internal:9110", false},
		{"http://localhost.example.com", false},
		{"ftp://127.0.0.1", false},
		{"127.0.0.1:9110", false},
	} {
		if _, err := New(Config{URL: c.url, Token: tok}); (err == nil) != c.ok {
			t.Errorf("%s: err %v, want ok=%v", c.url, err, c.ok)
		}
	}
	if _, err := New(Config{URL: "https://dp.internal"}); err == nil {
		t.Error("no token accepted")
	}
}
