package server

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/sekgate/gateway/shared/snapshot"
)

// TestPooledBodiesAreNotShared: request bodies past the prefetched 8 KiB are read into
// pooled buffers. Many such requests at once, streaming and not, each reach the upstream
// whole and unchanged, and each client gets the answer to its own request: no buffer is
// handed to another request while its body is still in use.
func TestPooledBodiesAreNotShared(t *testing.T) {
	tagRE := regexp.MustCompile(`tag-[0-9]+-[0-9]+`)
	up := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		tags := tagRE.FindAll(b, -1)
		// Every request carries its tag at both ends of a 24 KiB prompt.
		if len(tags) != 2 || string(tags[0]) != string(tags[1]) {
			http.Error(w, "mangled body", http.StatusBadRequest)
			return
		}
		tag := string(tags[0])
		if strings.Contains(string(b), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", tag)
			w.(http.Flusher).Flush()
			fmt.Fprint(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, strings.Replace(answerWithUsage(`{"prompt_tokens":5,"completion_tokens":1}`), `"hi"`, `"`+tag+`"`, 1))
	})
	g := startSimGateway(t, []snapshot.Route{chatRoute("rt-a", "a", up, "SE", 1, 1)})
	filler := strings.Repeat("hej hopp ", 24<<10/9)
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			for i := range 15 {
				tag := fmt.Sprintf("tag-%d-%d", w, i)
				stream := i%3 == 0
				body := fmt.Sprintf(`{"model":"llama8b","max_tokens":4,"stream":%t,"messages":[{"role":"user","content":"%s %s %s"}]}`,
					stream, tag, filler, tag)
				r := g.post(t, g.Keys.SE, body)
				if r.Status != 200 || !strings.Contains(r.Body, tag) || len(tagRE.FindAllString(r.Body, -1)) != 1 {
					t.Errorf("%s (stream %v): %d %.200s", tag, stream, r.Status, r.Body)
					return
				}
			}
		})
	}
	wg.Wait()
}
