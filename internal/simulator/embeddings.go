package simulator

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"net/http"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/shared/jsonenc"
)

// maxDims bounds the dimensions a request may ask for.
const maxDims = 8192

// Embedding returns the simulator's deterministic embedding of input with dims dimensions:
// a pseudo-random vector seeded by a hash of the input, scaled to unit length. Exported so
// tests elsewhere can check vectors.
func Embedding(input string, dims int) []float32 {
	return embed(make([]float32, 0, dims), input, dims)
}

func embed(v []float32, input string, dims int) []float32 {
	x := hash64(input)
	var sum float64
	for i := 0; i < dims; i++ {
		f := float32(float64(splitmix64(&x)>>11)/(1<<53)*2 - 1)
		v = append(v, f)
		sum += float64(f) * float64(f)
	}
	if sum > 0 {
		inv := float32(1 / math.Sqrt(sum))
		for i := range v {
			v[i] *= inv
		}
	}
	return v
}

// embeddings answers POST /v1/embeddings: one vector per input (a string or an array of
// strings; non-string items are hashed by their JSON text), Config.EmbeddingDims dimensions
// unless "dimensions" asks for fewer or more, "encoding_format" float (default) or base64
// (little-endian float32). Usage counts the inputs' words as prompt tokens.
func (s *Server) embeddings(w http.ResponseWriter, r *http.Request, c *call) {
	in := c.root.Get("input")
	var inputs []string
	switch {
	case in.Type == gjson.String:
		inputs = []string{in.Str}
	case in.IsArray():
		in.ForEach(func(_, v gjson.Result) bool {
			if v.Type == gjson.String {
				inputs = append(inputs, v.Str)
			} else {
				inputs = append(inputs, v.Raw)
			}
			return true
		})
	}
	if len(inputs) == 0 {
		c.badRequest("input", "input must be a string or a non-empty array")
		return
	}
	dims := s.cfg.EmbeddingDims
	if d := c.root.Get("dimensions"); d.Exists() {
		if d.Type != gjson.Number || d.Int() < 1 || d.Int() > maxDims {
			c.badRequest("dimensions", "dimensions must be an integer from 1 to "+strconv.Itoa(maxDims))
			return
		}
		dims = int(d.Int())
	}
	b64 := false
	switch f := c.root.Get("encoding_format"); f.Str {
	case "", "float":
	case "base64":
		b64 = true
	default:
		c.badRequest("encoding_format", "encoding_format must be float or base64")
		return
	}
	if !c.waitGeneration(1) {
		return
	}
	tokens := 0
	b := make([]byte, 0, 128+len(inputs)*dims*12)
	b = append(b, `{"object":"list","data":[`...)
	vec := make([]float32, 0, dims)
	raw := make([]byte, 4*dims)
	for i, text := range inputs {
		tokens += CountTokens(text)
		vec = embed(vec[:0], text, dims)
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"object":"embedding","index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"embedding":`...)
		if b64 {
			for j, f := range vec {
				binary.LittleEndian.PutUint32(raw[4*j:], math.Float32bits(f))
			}
			b = append(b, '"')
			b = base64.StdEncoding.AppendEncode(b, raw)
			b = append(b, '"')
		} else {
			b = append(b, '[')
			for j, f := range vec {
				if j > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendFloat(b, float64(f), 'g', -1, 32)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	b = append(b, `],"model":`...)
	b = jsonenc.AppendString(b, c.model)
	b = append(b, `,"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(tokens), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(tokens), 10)
	b = append(b, "}}\n"...)
	c.writeJSON(b)
}
