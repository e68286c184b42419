package conformance

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// A failure both planes answer is worded the same way by both: the data plane's public
// listener, the control plane's node-facing listener and its admin listener give the same
// status, type, code and message for an unknown path and for a method a path does not
// allow.
func TestErrors_PlanesWordSharedFailuresAlike(t *testing.T) {
	s := getStack(t)
	type answer struct {
		Status              int
		Type, Code, Message string
	}
	ask := func(method, url, token string) answer {
		t.Helper()
		req, _ := http.NewRequest(method, url, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		var e envelope
		if err := json.Unmarshal(b, &e); err != nil || e.Error.Code == nil {
			t.Fatalf("%s %s: %d %s: not an error envelope with a code", method, url, res.StatusCode, b)
		}
		return answer{res.StatusCode, e.Error.Type, *e.Error.Code, e.Error.Message}
	}
	cases := []struct {
		name string
		asks [3]func() answer
		want int
	}{
		{"unknown path", [3]func() answer{
			func() answer { return ask("GET", s.DataURL+"/v1/no-such-path", "") },
			func() answer { return ask("GET", s.CPURL+"/internal/v1/no-such-path", s.NodeToken) },
			func() answer { return ask("GET", s.AdminURL+"/admin/v1/no-such-path", s.AdminToken) },
		}, 404},
		{"method not allowed", [3]func() answer{
			func() answer { return ask("DELETE", s.DataURL+"/v1/models", "") },
			func() answer { return ask("DELETE", s.CPURL+"/internal/v1/snapshot", s.NodeToken) },
			func() answer { return ask("DELETE", s.AdminURL+"/admin/v1/snapshot", s.AdminToken) },
		}, 405},
	}
	for _, c := range cases {
		dp, node, admin := c.asks[0](), c.asks[1](), c.asks[2]()
		if dp.Status != c.want || node != dp || admin != dp {
			t.Errorf("%s: data plane %+v, control plane node listener %+v, admin listener %+v", c.name, dp, node, admin)
		}
	}
}
