package internalapi

import "testing"

func TestParseProtocol(t *testing.T) {
	tests := []struct {
		in      string
		want    int
		wantErr bool
	}{
		{"", 1, false},
		{"1", 1, false},
		{"7", 7, false},
		{"0", 0, true},
		{"-1", 0, true},
		{"v2", 0, true},
		{"1.5", 0, true},
		{"9999999999", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseProtocol(tt.in)
		if (err != nil) != tt.wantErr || (!tt.wantErr && got != tt.want) {
			t.Errorf("ParseProtocol(%q) = %d, %v", tt.in, got, err)
		}
	}
	if !NodeProtocolSupported(ProtocolVersion) || !NodeProtocolSupported(MinProtocolVersion) {
		t.Error("this build's own range must be supported")
	}
	if NodeProtocolSupported(ProtocolVersion+1) || NodeProtocolSupported(MinProtocolVersion-1) {
		t.Error("versions outside [Min, ProtocolVersion] must be refused")
	}
}
