package server

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/internal/simulator"
)

// deliveredOutputs counts the outputs a client received in a chat stream: every choice of
// a chunk whose delta has text, reasoning (under either name) or a tool call's name or
// arguments; read independently of the node's own count (proxy's output.go).
func deliveredOutputs(body string) int64 {
	var n int64
	for _, line := range strings.Split(body, "\n") {
		data, ok := strings.CutPrefix(line, "data:") // TGI writes no space
		if data = strings.TrimSpace(data); !ok || data == "[DONE]" {
			continue
		}
		gjson.Get(data, "choices").ForEach(func(_, c gjson.Result) bool {
			d := c.Get("delta")
			out := d.Get("content").String() != "" || d.Get("reasoning").String() != "" ||
				d.Get("reasoning_content").String() != ""
			d.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
				out = out || tc.Get("function.name").String() != "" || tc.Get("function.arguments").String() != ""
				return true
			})
			if out {
				n++
			}
			return true
		})
	}
	return n
}

// TestCutStreamChargesDelivered: a stream that ends before the server reported its output
// (the server broke it, or the node cut it at the request's output bound because the
// server reads no length field, as the simulator's dialects do not) is charged exactly the
// output its client received, for every server's chunk shapes: role chunks, SGLang's
// nulls, Ollama's empty last chunk, tool-call heads carry none. The bound cut delivers
// exactly the bound.
func TestCutStreamChargesDelivered(t *testing.T) {
	g := startDialectGateway(t)
	cases := []struct {
		scenario  string
		maxTokens int // 0: none
		want      int64
	}{
		{simulator.ScenarioCut, 0, 2}, // two text chunks, then the server breaks the stream
		{simulator.ScenarioReasoning, 5, 5},
		{simulator.ScenarioTool, 2, 2},
		{simulator.ScenarioPlain, 3, 3},
	}
	n := 0
	for _, d := range []string{simulator.DialectOllama, simulator.DialectVLLM, simulator.DialectSGLang,
		simulator.DialectLlamaCpp, simulator.DialectTGI, simulator.DialectOpenAI} {
		for _, c := range cases {
			if c.scenario == simulator.ScenarioReasoning && !hasReasoning(d) {
				continue // text only, within the bound: not cut
			}
			want := c.want
			t.Run(d+"/"+c.scenario, func(t *testing.T) {
				body := `{"model":"` + dialectModel(d) + `","stream":true,"messages":[{"role":"user","content":"hej scenario:` + c.scenario + `"}]`
				if c.scenario == simulator.ScenarioTool {
					body += `,"tools":[{"type":"function","function":{"name":"` + simulator.DialectToolName + `","parameters":{"type":"object"}}}]`
				}
				if c.maxTokens > 0 {
					body += `,"max_tokens":` + itoa(c.maxTokens)
				}
				req, _ := http.NewRequest("POST", g.URL+"/v1/chat/completions", strings.NewReader(body+"}"))
				req.Header.Set("Authorization", "Bearer "+g.Key)
				resp, err := testClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				n++
				if resp.StatusCode != 200 {
					t.Fatalf("%d %s", resp.StatusCode, b)
				}
				got := deliveredOutputs(string(b))
				rec := awaitRecords(t, g.Meter, n)[n-1]
				if got != want || rec.CompletionTokens != got {
					t.Errorf("delivered %d outputs, charged %d output tokens (%s), want %d delivered and charged\n%s",
						got, rec.CompletionTokens, rec.Result, want, b)
				}
				if strings.Contains(string(b), "[DONE]") {
					t.Errorf("a cut stream ended with [DONE]: %s", b)
				}
			})
		}
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
