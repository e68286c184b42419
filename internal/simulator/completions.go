package simulator

import (
	"net/http"

	"github.com/tidwall/gjson"
)

// completions answers POST /v1/completions. The prompt is one string (an array of strings is
// read as their concatenation with spaces, as some servers accept it).
func (s *Server) completions(w http.ResponseWriter, r *http.Request, c *call) {
	p := c.root.Get("prompt")
	var prompt string
	switch {
	case p.Type == gjson.String:
		prompt = p.Str
	case p.IsArray():
		prompt = contentText(p)
		if prompt == "" {
			p.ForEach(func(_, v gjson.Result) bool {
				if prompt != "" {
					prompt += " "
				}
				prompt += v.String()
				return true
			})
		}
	default:
		c.badRequest("prompt", "prompt is required")
		return
	}
	promptTok := CountTokens(prompt)
	seed := hash64(prompt)
	n, cut := c.outputLimit(c.root.Get("max_tokens"))
	finish := "stop"
	if cut {
		finish = "length"
	}
	id := s.nextID("cmpl-")
	created := s.cfg.Now().Unix()
	if !c.stream {
		if !c.waitGeneration(n) {
			return
		}
		b := make([]byte, 0, 256+n*10)
		b = chatHead(b, id, "text_completion", created, c.model)
		b = append(b, `"choices":[{"index":0,"text":"`...)
		b = appendWords(b, seed, n)
		b = append(b, `","logprobs":null,"finish_reason":"`...)
		b = append(b, finish...)
		b = append(b, `"}],`...)
		b = c.appendUsageOpenAI(b, promptTok, n)
		b = append(b, "}\n"...)
		c.writeJSON(b)
		return
	}
	e := c.startStream()
	if e == nil {
		return
	}
	b := make([]byte, 0, 256)
	chunk := func(text []byte, finish string) []byte {
		b = chatHead(b[:0], id, "text_completion", created, c.model)
		b = append(b, `"choices":[{"index":0,"text":"`...)
		b = append(b, text...)
		b = append(b, `","logprobs":null,"finish_reason":`...)
		if finish == "" {
			b = append(b, "null"...)
		} else {
			b = append(b, '"')
			b = append(b, finish...)
			b = append(b, '"')
		}
		return append(b, "}]}"...)
	}
	var piece []byte
	for i := 0; i < n; i++ {
		if !e.pace(i) {
			return
		}
		piece = streamPiece(piece[:0], seed, i)
		if !e.send("", chunk(piece, "")) {
			return
		}
	}
	if !e.send("", chunk(nil, finish)) {
		return
	}
	if c.root.Get("stream_options.include_usage").Type == gjson.True {
		b = chatHead(b[:0], id, "text_completion", created, c.model)
		b = append(b, `"choices":[],`...)
		b = c.appendUsageOpenAI(b, promptTok, n)
		b = append(b, '}')
		if !e.send("", b) {
			return
		}
	}
	if e.send("", []byte("[DONE]")) {
		e.finish()
	}
}
