package benchrun

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestSSEClientTimestampsEvents streams four events, the last two 30 ms apart and the first
// two in one write, over one keep-alive connection twice.
func TestSSEClientTimestampsEvents(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Header.Get("Authorization") != "Bearer k" {
			w.WriteHeader(401)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		io.WriteString(w, "data: {\"a\":1}\n\nevent: x\ndata: {\"a\":2}\n\n")
		fl.Flush()
		time.Sleep(30 * time.Millisecond)
		io.WriteString(w, ": comment\n\ndata: {\"a\":3}\n\n")
		fl.Flush()
		time.Sleep(30 * time.Millisecond)
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	c := &sseClient{addr: strings.TrimPrefix(srv.URL, "http://")}
	defer c.close()
	req := streamRequest(c.addr, "Bearer k", []byte(`{}`))
	for i := 0; i < 2; i++ {
		st, err := c.do(req, time.Now().Add(5*time.Second), true)
		if err != nil {
			t.Fatal(err)
		}
		if st.Status != 200 || !st.Done || st.Events != 4 || len(st.At) != 4 {
			t.Fatalf("round %d: %+v", i, st)
		}
		if gap := st.At[1] - st.At[0]; gap > 10*time.Millisecond {
			t.Errorf("events written together arrived %v apart", gap)
		}
		if gap := st.At[3] - st.At[2]; gap < 20*time.Millisecond {
			t.Errorf("paced events arrived %v apart", gap)
		}
		if st.First != st.At[0] || st.Headers > st.First {
			t.Errorf("headers %v first %v", st.Headers, st.First)
		}
	}
	bad := streamRequest(c.addr, "Bearer wrong", []byte(`{}`))
	if _, err := c.do(bad, time.Now().Add(5*time.Second), false); err == nil {
		t.Error("401: want error")
	}
}
