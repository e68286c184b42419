package apierror

import (
	"encoding/json"
	"testing"
)

func TestJSON(t *testing.T) {
	tests := []struct {
		name     string
		err      *Error
		messages bool
		want     string
	}{
		{"param", InvalidParam("max_tokens", "must be >= 1"), false,
			`{"error":{"type":"invalid_request_error","message":"must be \u003e= 1","code":null,"param":"max_tokens"}}`},
		{"messages style", New(401, TypeAuthentication, CodeInvalidAPIKey, "bad key"), true,
			`{"type":"error","error":{"type":"authentication_error","message":"bad key","code":"invalid_api_key","param":null}}`},
		{"doc", New(501, TypeInvalidRequest, CodeEndpointNotSupported, "no").WithDoc("https://x/docs"), false,
			`{"error":{"type":"invalid_request_error","message":"no","code":"endpoint_not_supported","param":null},"documentation_url":"https://x/docs"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(tt.err.JSON(tt.messages))
			if got != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
			var v map[string]any
			if err := json.Unmarshal([]byte(got), &v); err != nil {
				t.Fatal(err)
			}
		})
	}
}
