package snapshot

import (
	"errors"
	"testing"
)

func TestRouteValidate(t *testing.T) {
	ok := Route{ID: "r1", Model: "m", BaseURL: "https://vllm.internal:8000/v1", CredentialsRef: "env:GATEWAY_CREDENTIAL_VLLM",
		Protocols: []string{EndpointChat}}
	tests := []struct {
		name  string
		edit  func(r *Route)
		field string // "" = valid
	}{
		{"valid", func(*Route) {}, ""},
		{"no credentials", func(r *Route) { r.CredentialsRef = "" }, ""},
		{"plain http with path", func(r *Route) { r.BaseURL = "http://10.0.0.5/llm/v1/" }, ""},
		{"missing id", func(r *Route) { r.ID = "" }, "id"},
		{"replica id", func(r *Route) { r.ID = "r1@10.0.0.5:8000" }, "id"},
		{"at sign in id", func(r *Route) { r.ID = "team@se" }, ""},
		{"empty base url", func(r *Route) { r.BaseURL = "" }, "base_url"},
		{"relative", func(r *Route) { r.BaseURL = "/v1" }, "base_url"},
		{"ftp", func(r *Route) { r.BaseURL = "ftp://h/v1" }, "base_url"},
		{"userinfo", func(r *Route) { r.BaseURL = "http://user:pw@h/v1" }, "base_url"},
		{"query", func(r *Route) { r.BaseURL = "http://h/v1?x=1" }, "base_url"},
		{"empty query", func(r *Route) { r.BaseURL = "http://h/v1?" }, "base_url"},
		{"fragment", func(r *Route) { r.BaseURL = "http://h/v1#f" }, "base_url"},
		{"empty fragment", func(r *Route) { r.BaseURL = "http://h/v1#" }, "base_url"},
		{"no host", func(r *Route) { r.BaseURL = "http:///v1" }, "base_url"},
		{"port only", func(r *Route) { r.BaseURL = "http://:80/v1" }, "base_url"},
		{"opaque", func(r *Route) { r.BaseURL = "http:h/v1" }, "base_url"},
		{"node token", func(r *Route) { r.CredentialsRef = "env:GATEWAY_NODE_TOKEN" }, "credentials_ref"},
		{"any variable", func(r *Route) { r.CredentialsRef = "env:HOME" }, "credentials_ref"},
		{"prefix only", func(r *Route) { r.CredentialsRef = "env:GATEWAY_CREDENTIAL_" }, "credentials_ref"},
		{"lower case", func(r *Route) { r.CredentialsRef = "env:GATEWAY_CREDENTIAL_key" }, "credentials_ref"},
		{"file scheme", func(r *Route) { r.CredentialsRef = "file:/etc/passwd" }, "credentials_ref"},
		{"unknown protocol", func(r *Route) { r.Protocols = []string{EndpointChat, "/v2/chat"} }, "protocols[1]"},
		{"negative max conns", func(r *Route) { r.MaxConns = -1 }, "max_conns"},
		{"negative timeout", func(r *Route) { r.TotalTimeoutMS = -5 }, "total_timeout_ms"},
		{"dns discovery", func(r *Route) { r.Discovery = DiscoveryDNS }, ""},
		{"srv discovery", func(r *Route) {
			r.Discovery, r.BaseURL = DiscoveryDNSSRV, "http://_http._tcp.vllm.ns.svc.cluster.local/v1"
		}, ""},
		{"unknown discovery", func(r *Route) { r.Discovery = "consul" }, "discovery"},
		{"dns discovery of an IP", func(r *Route) { r.Discovery, r.BaseURL = DiscoveryDNS, "http://10.0.0.5:8000/v1" }, "discovery"},
		{"dns discovery of an IPv6", func(r *Route) { r.Discovery, r.BaseURL = DiscoveryDNS, "http://[fd00::5]:8000/v1" }, "discovery"},
		{"srv discovery with a port", func(r *Route) { r.Discovery = DiscoveryDNSSRV }, "discovery"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ok
			tt.edit(&r)
			err := r.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || !errors.Is(err, ErrInvalidRoute) {
				t.Fatalf("err %v, want a FieldError", err)
			}
			if fe.Field != tt.field {
				t.Fatalf("field %q, want %q (%v)", fe.Field, tt.field, err)
			}
		})
	}
}

func TestParseBaseURL(t *testing.T) {
	tests := []struct {
		raw              string
		tls              bool
		host, addr, path string
	}{
		{"http://127.0.0.1:8090/v1", false, "127.0.0.1:8090", "127.0.0.1:8090", ""},
		{"https://api.example.com/v1/", true, "api.example.com", "api.example.com:443", ""},
		{"http://h/proxy/llm/v1", false, "h", "h:80", "/proxy/llm"},
		{"http://[::1]:9/", false, "[::1]:9", "[::1]:9", ""},
	}
	for _, tt := range tests {
		b, err := ParseBaseURL(tt.raw)
		if err != nil {
			t.Fatalf("%s: %v", tt.raw, err)
		}
		if b.TLS != tt.tls || b.Host != tt.host || b.Addr != tt.addr || b.PathPrefix != tt.path {
			t.Fatalf("%s: %+v", tt.raw, b)
		}
	}
}

func FuzzRouteValidate(f *testing.F) {
	for _, s := range []string{"http://h/v1", "https://u@h:1/v1?q#f", "http://[::1", "env:GATEWAY_CREDENTIAL_X", "env:X"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, base, cred string) {
		r := Route{ID: "r", BaseURL: base, CredentialsRef: cred}
		if err := r.Validate(); err != nil {
			return
		}
		// What passes must be servable: a host to dial and no credentials in the URL.
		b, err := ParseBaseURL(base)
		if err != nil || b.Addr == "" || b.Host == "" {
			t.Fatalf("validated %q but parse gives %+v, %v", base, b, err)
		}
	})
}

func TestSplitReplicaID(t *testing.T) {
	tests := []struct {
		id, route, addr string
		ok              bool
	}{
		{"vllm-se@10.0.0.5:8000", "vllm-se", "10.0.0.5:8000", true},
		{"a@b@10.0.0.5:8000", "a@b", "10.0.0.5:8000", true},
		{"vllm-v6@[fd00::5]:8000", "vllm-v6", "[fd00::5]:8000", true},
		{"vllm-se", "", "", false},
		{"@10.0.0.5:8000", "", "", false},
		{"team@example", "", "", false},
		{"r@host.example:80", "", "", false},
	}
	for _, tt := range tests {
		route, addr, ok := SplitReplicaID(tt.id)
		if route != tt.route || addr != tt.addr || ok != tt.ok {
			t.Errorf("SplitReplicaID(%q) = %q, %q, %v; want %q, %q, %v", tt.id, route, addr, ok, tt.route, tt.addr, tt.ok)
		}
		if tt.ok && ReplicaID(route, addr) != tt.id {
			t.Errorf("ReplicaID(%q, %q) does not give back %q", route, addr, tt.id)
		}
	}
}
