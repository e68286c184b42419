package simulator

import (
	"net/http"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/shared/jsonenc"
)

// Noul answers, in order of the hash that picks them.
var noulValues = [...]string{"yes", "no", "unknown"}

// systemone answers POST /v1/systemone, the decision-model protocol: body {model, state,
// questions: {name: {type, ...}}}. Each answer is derived from a hash of the state and the
// question name, so the same question about the same state always gets the same answer:
//
//   - choice (requires a non-empty "choices" array of strings): {"choice": one of choices}
//   - noul: {"value": "yes" | "no" | "unknown"}
//   - score: {"score": a number from 0 to 1 with three decimals}
//
// Usage: input_tokens are the words of state; output_tokens one per question.
func (s *Server) systemone(w http.ResponseWriter, r *http.Request, c *call) {
	state := c.root.Get("state")
	if state.Type != gjson.String {
		c.badRequest("state", "state must be a string")
		return
	}
	qs := c.root.Get("questions")
	if !qs.IsObject() {
		c.badRequest("questions", "questions must be an object of named questions")
		return
	}
	b := make([]byte, 0, 256)
	b = append(b, `{"id":`...)
	b = jsonenc.AppendString(b, s.nextID("dec_"))
	b = append(b, `,"object":"decision","model":`...)
	b = jsonenc.AppendString(b, c.model)
	b = append(b, `,"answers":{`...)
	n := 0
	bad, badMsg := "", ""
	qs.ForEach(func(name, q gjson.Result) bool {
		h := hash64(state.Str + "\x00" + name.Str)
		if n > 0 {
			b = append(b, ',')
		}
		b = jsonenc.AppendString(b, name.Str)
		b = append(b, ':')
		switch q.Get("type").Str {
		case "choice":
			choices := q.Get("choices").Array()
			if len(choices) == 0 || choices[0].Type != gjson.String {
				bad, badMsg = "questions."+name.Str+".choices", "a choice question needs a non-empty array of strings"
				return false
			}
			b = append(b, `{"choice":`...)
			b = jsonenc.AppendString(b, choices[h%uint64(len(choices))].String())
			b = append(b, '}')
		case "noul":
			b = append(b, `{"value":"`...)
			b = append(b, noulValues[h%uint64(len(noulValues))]...)
			b = append(b, `"}`...)
		case "score":
			b = append(b, `{"score":`...)
			b = strconv.AppendFloat(b, float64(h%1001)/1000, 'f', -1, 64)
			b = append(b, '}')
		default:
			bad, badMsg = "questions."+name.Str+".type", "question type must be choice, noul or score"
			return false
		}
		n++
		return true
	})
	if bad != "" {
		c.badRequest(bad, badMsg)
		return
	}
	if n == 0 {
		c.badRequest("questions", "questions must not be empty")
		return
	}
	if !c.waitGeneration(n) {
		return
	}
	b = append(b, `},"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(CountTokens(state.Str)), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, "}}\n"...)
	c.writeJSON(b)
}

// models answers GET /v1/models with Config.Models.
func (s *Server) models(w http.ResponseWriter, r *http.Request, _ *call) {
	w.Header()["Content-Type"] = ctJSON
	if r.Method == http.MethodHead {
		return
	}
	w.Write(s.modelsJSON)
}

func (s *Server) buildModelsJSON() []byte {
	b := []byte(`{"object":"list","data":[`)
	for i, m := range s.cfg.Models {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = jsonenc.AppendString(b, m)
		b = append(b, `,"object":"model","created":0,"owned_by":`...)
		b = jsonenc.AppendString(b, s.cfg.Name)
		b = append(b, '}')
	}
	return append(b, "]}\n"...)
}
