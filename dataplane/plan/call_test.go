package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/admit"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/internal/fixture"
	"github.com/sekgate/gateway/dataplane/reqparse"
	"github.com/sekgate/gateway/shared/apierror"
)

// Make answers every request it cannot plan, and plans the rest with the model's routes
// and bounds.
func TestMake(t *testing.T) {
	snap, _ := fixture.Snapshot(1, "http://127.0.0.1:1/v1", time.Now())
	x, err := index.Build(snap)
	if err != nil {
		t.Fatal(err)
	}
	acct, _ := x.Account(fixture.AcctSE)
	p := admit.Principal{Idx: x, Acct: acct}
	cases := []struct {
		name     string
		e        index.Endpoint
		body     string
		code     string // the refusal's code; "": planned
		contains string
	}{
		{"planned", index.EPChat, `{"model":"` + fixture.ModelChat + `","messages":[{"role":"user","content":"hej"}],"max_tokens":10}`, "", ""},
		{"did you mean", index.EPChat, `{"model":"llama-3.1-8b-instrukt","messages":[{"role":"user","content":"hej"}]}`, apierror.CodeModelNotFound, "did you mean " + fixture.ModelChat},
		{"embeddings model on chat", index.EPChat, `{"model":"` + fixture.ModelEmbed + `","messages":[{"role":"user","content":"hej"}]}`, apierror.CodeUnsupportedProtocol, "/v1/embeddings"},
		{"over the window", index.EPChat, `{"model":"` + fixture.ModelChat + `","messages":[{"role":"user","content":"hej"}],"max_tokens":100000}`, "", "context window"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := []byte(c.body)
			req, perr := reqparse.Parse(c.e.Path(), body)
			if perr != nil {
				t.Fatal(perr)
			}
			var call Call
			aerr := call.Make(p, c.e, &req, body, time.Now())
			switch {
			case c.contains == "" && aerr != nil:
				t.Fatalf("refused: %v", aerr)
			case c.contains == "":
				if call.Model.ID != fixture.ModelChat || len(call.Cands) == 0 || call.Bounds.Output != 10 || !call.HasKey {
					t.Errorf("planned %+v", call)
				}
			case aerr == nil:
				t.Fatal("planned, want a refusal")
			case c.code != "" && aerr.Code != c.code || !strings.Contains(aerr.Message, c.contains):
				t.Errorf("refusal %v, want code %q containing %q", aerr, c.code, c.contains)
			}
		})
	}
}
