package internalapi

import (
	"reflect"
	"testing"
)

func TestRouteProblemsRoundTrip(t *testing.T) {
	in := map[string]string{"vllm-se": ProblemCredentialMissing, "tgi-de": ProblemUnreachable, "x": "bogus", "": ProblemTLS}
	s := FormatRouteProblems(in)
	if s != "tgi-de=unreachable&vllm-se=credential_missing" {
		t.Fatalf("format %q", s)
	}
	got, ok := ParseRouteProblems(s)
	if !ok || !reflect.DeepEqual(got, map[string]string{"vllm-se": ProblemCredentialMissing, "tgi-de": ProblemUnreachable}) {
		t.Fatalf("parse %v %v", got, ok)
	}
	for _, bad := range []string{"a=bogus", "a=tls&a=tls", "%zz", "a=" + ProblemTLS + "&b"} {
		if _, ok := ParseRouteProblems(bad); ok {
			t.Errorf("%q accepted", bad)
		}
	}
	if got, ok := ParseRouteProblems(""); !ok || len(got) != 0 {
		t.Errorf("empty: %v %v", got, ok)
	}
}

func TestCredentialsRoundTrip(t *testing.T) {
	s := FormatCredentials([]string{"GATEWAY_CREDENTIAL_VLLM", "HOME", "GATEWAY_CREDENTIAL_A", "GATEWAY_CREDENTIAL_b"})
	if s != "GATEWAY_CREDENTIAL_A,GATEWAY_CREDENTIAL_VLLM" {
		t.Fatalf("format %q", s)
	}
	if got, ok := ParseCredentials(s); !ok || len(got) != 2 {
		t.Fatalf("parse %v %v", got, ok)
	}
	for _, bad := range []string{"HOME", "GATEWAY_CREDENTIAL_", "GATEWAY_CREDENTIAL_A,,"} {
		if _, ok := ParseCredentials(bad); ok {
			t.Errorf("%q accepted", bad)
		}
	}
}
