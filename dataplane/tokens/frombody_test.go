package tokens

import (
	"testing"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/reqparse"
)

var fromBodyCases = []string{
	`{"id":"x","choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":12,"completion_tokens":3}}`,
	`{"usage":{"prompt_tokens":5,"completion_tokens":1},"choices":[]}`,
	`{"id":"x","choices":[{"message":{"content":"usage"}}]}`, // no usage
	`{"id":"x","usage":null}`, // usage null
	`{"choices":[{"usage":{"prompt_tokens":99}}],"usage":{"prompt_tokens":1,"completion_tokens":2}}`, // nested usage is not it
	`{"usage":{"prompt_tokens":1,"completion_tokens":2},"usage":{"prompt_tokens":7,"completion_tokens":8}}`,
	`{"us\u0061ge":{"prompt_tokens":4,"completion_tokens":4}}`, // an escaped key: the notes cannot tell
	` {"usage":{"prompt_tokens":2,"completion_tokens":2}}`,     // leading whitespace
	`{"usage":{"input_tokens":3,"output_tokens":4}}`,
	`{"usage":{"prompt_tokens":-1,"completion_tokens":2}}`,
	`{"usage":"many"}`,
	`[{"usage":{"prompt_tokens":1}}]`,
	`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"q":17,"r":18,"s":19,"t":20,"u":21,"v":22,"w":23,"x":24,"y":25,"z":26,"aa":27,"ab":28,"ac":29,"ad":30,"ae":31,"af":32,"ag":33,"usage":{"prompt_tokens":6,"completion_tokens":6}}`,
}

// TestFromBodyNotes: reading an answer's usage from the scan's notes gives what reading the
// whole answer gives, for every endpoint.
func TestFromBodyNotes(t *testing.T) {
	for _, body := range fromBodyCases {
		checkFromBodyNotes(t, []byte(body))
	}
}

func checkFromBodyNotes(t *testing.T, body []byte) {
	t.Helper()
	var m reqparse.EventMembers
	if !reqparse.ScanEvent(body, &m) {
		return
	}
	for _, e := range []index.Endpoint{index.EPChat, index.EPCompletions, index.EPEmbeddings, index.EPMessages, index.EPResponses} {
		got, gotOK := FromBody(e, body, &m)
		want, wantOK := FromBody(e, body, nil)
		if got != want || gotOK != wantOK {
			t.Fatalf("%s on %s: %+v %v from the notes, %+v %v from the whole answer", e.Path(), body, got, gotOK, want, wantOK)
		}
	}
}
