package simulator

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/internal/poll"
)

const chatBody = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
const chatStream = `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`

func TestInjectedStatus(t *testing.T) {
	s := startSim(t, Knobs{})
	tests := []struct {
		name       string
		path, body string
		hdr        []string
		status     int
		retryAfter string
		errType    string
		msgStyle   bool
	}{
		{"header 503 with Retry-After", "/v1/chat/completions", chatBody, []string{"X-Sim-Status", "503", "X-Sim-Retry-After", "3"}, 503, "3", "overloaded_error", false},
		{"header 429", "/v1/embeddings", `{"model":"e","input":"x"}`, []string{"X-Sim-Status", "429"}, 429, "", "rate_limit_error", false},
		{"body extension 502", "/v1/chat/completions", `{"model":"m","sim":{"status":502,"retry_after":9},"messages":[{"role":"user","content":"hi"}]}`, nil, 502, "9", "api_error", false},
		{"header beats body", "/v1/chat/completions", `{"model":"m","sim":{"status":502},"messages":[{"role":"user","content":"hi"}]}`, []string{"X-Sim-Status", "504"}, 504, "", "timeout_error", false},
		{"messages style", "/v1/messages", `{"model":"a","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, []string{"X-Sim-Status", "529"}, 529, "", "overloaded_error", true},
		{"status 200 is no fault", "/v1/chat/completions", chatBody, []string{"X-Sim-Status", "200"}, 200, "", "", false},
		{"error rate 1", "/v1/chat/completions", chatBody, []string{"X-Sim-Error-Rate", "1", "X-Sim-Error-Status", "500"}, 500, "", "api_error", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, hdr, raw := post(t, s, tt.path, tt.body, tt.hdr...)
			if status != tt.status || hdr.Get("Retry-After") != tt.retryAfter {
				t.Fatalf("status %d Retry-After %q, want %d %q: %s", status, hdr.Get("Retry-After"), tt.status, tt.retryAfter, raw)
			}
			if tt.status == 200 {
				return
			}
			m := decode(t, string(raw))
			if dig(m, "error", "type") != tt.errType || dig(m, "error", "message") == nil {
				t.Errorf("envelope %s", raw)
			}
			if (m["type"] == "error") != tt.msgStyle {
				t.Errorf("messages-style type: %s", raw)
			}
		})
	}
}

func TestServerKnobsAndConfigEndpoint(t *testing.T) {
	s := startSim(t, Knobs{ErrorRate: 1, ErrorStatus: 429, RetryAfterS: 2})
	status, hdr, _ := post(t, s, "/v1/chat/completions", chatBody)
	if status != 429 || hdr.Get("Retry-After") != "2" {
		t.Fatalf("server-wide error rate: %d %q", status, hdr.Get("Retry-After"))
	}
	// PUT /sim/config replaces the knobs.
	req, _ := http.NewRequest(http.MethodPut, "http://"+s.Addr()+"/sim/config", strings.NewReader(`{"output_tokens":3}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("PUT /sim/config: %v %v", resp, err)
	}
	var k Knobs
	json.NewDecoder(resp.Body).Decode(&k)
	resp.Body.Close()
	if k.OutputTokens != 3 || k.ErrorRate != 0 || k.ErrorStatus != 503 {
		t.Errorf("knobs after PUT %+v", k)
	}
	status, _, raw := post(t, s, "/v1/chat/completions", chatBody)
	if status != 200 || num(dig(decode(t, string(raw)), "usage", "completion_tokens")) != 3 {
		t.Errorf("after PUT: %d %s", status, raw)
	}
	s.SetKnobs(Knobs{Status: 418})
	if status, _, _ := post(t, s, "/v1/chat/completions", chatBody); status != 418 {
		t.Errorf("SetKnobs status: %d", status)
	}
}

func TestFailAfterEvents(t *testing.T) {
	s := startSim(t, Knobs{})
	for _, path := range []string{"/v1/chat/completions", "/v1/messages", "/v1/responses", "/v1/completions"} {
		t.Run(path, func(t *testing.T) {
			body := map[string]string{
				"/v1/chat/completions": chatStream,
				"/v1/messages":         `{"model":"a","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
				"/v1/responses":        `{"model":"r","stream":true,"input":"hi"}`,
				"/v1/completions":      `{"model":"c","stream":true,"prompt":"hi"}`,
			}[path]
			req, _ := http.NewRequest(http.MethodPost, "http://"+s.Addr()+path, strings.NewReader(body))
			req.Header.Set("X-Sim-Fail-After-Events", "3")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			raw, err := io.ReadAll(resp.Body)
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("read error %v, want unexpected EOF", err)
			}
			if n := strings.Count(string(raw), "data: "); n != 3 {
				t.Errorf("%d events before the break, want 3:\n%s", n, raw)
			}
			for _, terminal := range []string{"[DONE]", "message_stop", "response.completed"} {
				if strings.Contains(string(raw), terminal) {
					t.Errorf("terminal %s sent on a broken stream", terminal)
				}
			}
		})
	}
	t.Run("non-streaming body cut", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+s.Addr()+"/v1/chat/completions", strings.NewReader(chatBody))
		req.Header.Set("X-Sim-Fail-After-Events", "1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("read error %v, want unexpected EOF", err)
		}
	})
	t.Run("zero drops the connection", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+s.Addr()+"/v1/chat/completions", strings.NewReader(chatBody))
		req.Header.Set("X-Sim-Fail-After-Events", "0")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("got status %d, want a transport error", resp.StatusCode)
		}
	})
	t.Run("malformed", func(t *testing.T) {
		status, _, raw := post(t, s, "/v1/chat/completions", chatBody, "X-Sim-Malformed", "1")
		if status != 200 || json.Valid(raw) {
			t.Errorf("status %d valid=%v", status, json.Valid(raw))
		}
	})
	if st := s.Stats(); st.Injected != 7 {
		t.Errorf("injected %d, want 7", st.Injected)
	}
}

func TestLatencyAndPacing(t *testing.T) {
	s := startSim(t, Knobs{})
	start := time.Now()
	status, _, _ := post(t, s, "/v1/chat/completions", chatBody, "X-Sim-Latency-Ms", "120")
	if el := time.Since(start); status != 200 || el < 120*time.Millisecond {
		t.Errorf("latency: status %d after %v", status, el)
	}

	// Streams: headers come after latency, the first event after TTFT, then one token per
	// 1/tps seconds.
	req, _ := http.NewRequest(http.MethodPost, "http://"+s.Addr()+"/v1/chat/completions", strings.NewReader(chatStream))
	req.Header.Set("X-Sim-TTFT-Ms", "150")
	req.Header.Set("X-Sim-Tokens-Per-Second", "100")
	req.Header.Set("X-Sim-Output-Tokens", "6")
	start = time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	headers := time.Since(start)
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	first := time.Since(start)
	rest, _ := io.ReadAll(br)
	all := time.Since(start)
	if headers >= 150*time.Millisecond || first < 150*time.Millisecond {
		t.Errorf("headers after %v, first event after %v; want headers before TTFT 150ms and first event after", headers, first)
	}
	// 6 tokens at 100/s: 5 gaps of 10ms after the first, so the stream cannot end before
	// 150ms + 50ms. Measured from the request's start, because a reader scheduled late
	// finds several events already buffered and the time from its first read proves nothing.
	if all < 200*time.Millisecond {
		t.Errorf("tokens not paced: stream ended %v after the request, want at least 200ms", all)
	}
	if !strings.Contains(string(rest), "[DONE]") {
		t.Errorf("stream incomplete")
	}
}

func TestCancellationCounted(t *testing.T) {
	s := startSim(t, Knobs{})
	waitFor := func(what string, cond func(Stats) bool) {
		t.Helper()
		if !poll.Wait(10*time.Second, func() bool { return cond(s.Stats()) }) {
			t.Fatalf("%s: stats %+v", what, s.Stats())
		}
	}

	// Non-streaming, client gives up during the latency wait.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+s.Addr()+"/v1/chat/completions", strings.NewReader(chatBody))
	req.Header.Set("X-Sim-Latency-Ms", "60000")
	doErr := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		doErr <- err
	}()
	waitFor("request in flight during the latency wait", func(st Stats) bool { return st.InFlight == 1 })
	cancel()
	if err := <-doErr; err == nil {
		t.Fatal("request should have been cancelled")
	}
	waitFor("non-streaming cancel", func(st Stats) bool { return st.Cancelled == 1 && st.InFlight == 0 })

	// Streaming, client closes after the first event.
	ctx, cancel = context.WithCancel(context.Background())
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, "http://"+s.Addr()+"/v1/chat/completions", strings.NewReader(chatStream))
	req.Header.Set("X-Sim-Tokens-Per-Second", "20")
	req.Header.Set("X-Sim-Output-Tokens", "100")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	waitFor("streaming cancel", func(st Stats) bool { return st.Cancelled == 2 && st.InFlight == 0 })
	if st := s.Stats(); st.Completed != 0 || st.Streams != 1 || st.ByPath["/v1/chat/completions"] != 2 || st.Requests != 2 {
		t.Errorf("stats %+v", st)
	}

	// The same counters over HTTP, and reset.
	resp, err = http.Get("http://" + s.Addr() + "/sim/stats")
	if err != nil {
		t.Fatal(err)
	}
	var st Stats
	json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if st.Name != "t" || st.Cancelled != 2 || st.ByPath["/v1/chat/completions"] != 2 {
		t.Errorf("GET /sim/stats %+v", st)
	}
	req, _ = http.NewRequest(http.MethodDelete, "http://"+s.Addr()+"/sim/stats", nil)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if st := s.Stats(); st.Requests != 0 || st.Cancelled != 0 {
		t.Errorf("after reset %+v", st)
	}
}

func TestCloseBreaksOpenStreams(t *testing.T) {
	s := startSim(t, Knobs{})
	req, _ := http.NewRequest(http.MethodPost, "http://"+s.Addr()+"/v1/chat/completions", strings.NewReader(chatStream))
	req.Header.Set("X-Sim-Tokens-Per-Second", "20")
	req.Header.Set("X-Sim-Output-Tokens", "1000")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	done := make(chan error, 1)
	go func() { _, err := io.ReadAll(resp.Body); done <- err }()
	// The headers are in: the stream is open.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Error("stream ended cleanly after Close; want a broken stream")
		}
	case <-time.After(10 * time.Second): // 1000 tokens at 20/s would take 50 s
		t.Fatal("stream still open after Close")
	}
}
