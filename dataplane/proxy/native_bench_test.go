package proxy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/tokens"
)

// benchNativeStream is a Messages-style or Responses-style stream of 100 text deltas with
// its opening and closing events, as vLLM's native endpoints send them.
func benchNativeStream(e index.Endpoint) []byte {
	var sb strings.Builder
	ev := func(name, data string) { fmt.Fprintf(&sb, "event: %s\ndata: %s\n\n", name, data) }
	if e == index.EPMessages {
		ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":12,"output_tokens":1}}}`)
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		for range 100 {
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" Hej"}}`)
		}
		ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":100}}`)
		ev("message_stop", `{"type":"message_stop"}`)
		return []byte(sb.String())
	}
	text := strings.Repeat(" Hej", 100)
	ev("response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[]}}`)
	ev("response.output_item.added", `{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}`)
	ev("response.content_part.added", `{"type":"response.content_part.added","sequence_number":2,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}`)
	for i := range 100 {
		ev("response.output_text.delta", fmt.Sprintf(`{"type":"response.output_text.delta","sequence_number":%d,"item_id":"msg_1","output_index":0,"content_index":0,"delta":" Hej","logprobs":[]}`, i+3))
	}
	ev("response.output_text.done", `{"type":"response.output_text.done","sequence_number":103,"item_id":"msg_1","output_index":0,"content_index":0,"text":"`+text+`","logprobs":[]}`)
	ev("response.content_part.done", `{"type":"response.content_part.done","sequence_number":104,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"`+text+`","annotations":[]}}`)
	item := `{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"` + text + `","annotations":[]}]}`
	ev("response.output_item.done", `{"type":"response.output_item.done","sequence_number":105,"output_index":0,"item":`+item+`}`)
	ev("response.completed", `{"type":"response.completed","sequence_number":106,"response":{"id":"resp_1","object":"response","status":"completed","output":[`+item+`],"usage":{"input_tokens":12,"output_tokens":100,"total_tokens":112}}}`)
	return []byte(sb.String())
}

// BenchmarkStreamNative reads a native Messages and Responses stream through Stream; the
// delivered output must be the 100 deltas' text, counted once.
func BenchmarkStreamNative(b *testing.B) {
	for _, e := range []index.Endpoint{index.EPMessages, index.EPResponses} {
		in := benchNativeStream(e)
		b.Run(e.Path(), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				var resp fasthttp.Response
				resp.SetBodyRaw(in)
				st := OpenStream(&resp, e, StreamOptions{Bounds: tokens.NewBounds(8192, 0, 1)})
				for !st.Result.Ended {
					if _, err := st.Next(); err != nil {
						b.Fatal(err)
					}
				}
				st.Close()
				if d := st.Delivered(); d.Pieces != 100 || d.Bytes != 400 {
					b.Fatalf("delivered %+v", d)
				}
			}
		})
	}
}
