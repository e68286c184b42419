// Package sim is a provider simulator: an HTTP server that stands in for model servers
// (vLLM, llama.cpp server, TGI, Ollama) in tests, in `make run` and in benchmarks. Under the
// base path /v1 it speaks chat completions, text completions, embeddings, Responses-style,
// Messages-style and the decision-model protocol, streaming and not, with usage in every
// answer. It lives in the gateway's module because the data plane's own tests run against it
// in process; its command is the deploy module's (deploy/cmd/simulator), and no production
// binary links it (internal/deptest).
//
// Answers are deterministic. Token counts follow one rule: a token is a whitespace-separated
// word (see CountTokens). Prompt tokens are the words of every message's text (system
// included; content parts' "text", tool results' content), of Responses instructions and
// input, of each embedding input, or of the decision state. Generated answers are
// Knobs.OutputTokens words (default 16) chosen from a hash of the prompt (see GenerateText),
// cut at max_tokens / max_output_tokens; streams send one word per text delta. A tool call's
// output tokens are the words of its arguments JSON, streamed one word per fragment. The
// decision model counts one output token per question.
//
// Faults and pacing are set by Knobs, per server and per request. GET /sim/stats reports
// counters (requests, per path, cancelled, in flight) so tests can prove that a client closing
// its connection cancels the upstream work.
package simulator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Config configures a Server. The zero value is usable.
type Config struct {
	// Name identifies this simulator in logs and stats (default "sim").
	Name string
	// Knobs are the server-wide answer knobs; they can be changed later with SetKnobs or
	// PUT /sim/config.
	Knobs Knobs
	// EmbeddingDims is the default embedding size (default 768).
	EmbeddingDims int
	// Models are listed by GET /v1/models. Any model name is accepted in requests.
	Models []string
	// Logger receives lifecycle logs (default: discard).
	Logger *slog.Logger
	// Now is the clock for "created" fields (default time.Now).
	Now func() time.Time
	// Engine, with Slots set, schedules requests like a vLLM replica (engine.go); the
	// zero value answers at once.
	Engine EngineConfig
}

// DefaultModels are listed by GET /v1/models when Config.Models is empty.
var DefaultModels = []string{
	"llama-3.1-8b-instruct", "qwen2.5-coder-1.5b", "nomic-embed-text-v1.5",
	"mistral-small-24b-instruct", "gemma-2-9b-it", "systemone-decider",
}

// Server is a running or runnable simulator.
type Server struct {
	cfg        Config
	knobs      atomic.Pointer[Knobs]
	stats      counters
	idSeq      atomic.Uint64
	modelsJSON []byte
	eng        *engine // nil: no engine

	mu   sync.Mutex
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
}

// New builds a Server from cfg, filling defaults.
func New(cfg Config) *Server {
	if cfg.Name == "" {
		cfg.Name = "sim"
	}
	if cfg.EmbeddingDims <= 0 {
		cfg.EmbeddingDims = 768
	}
	if len(cfg.Models) == 0 {
		cfg.Models = DefaultModels
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg}
	if cfg.Engine.Slots > 0 {
		s.eng = newEngine(cfg.Engine)
	}
	s.SetKnobs(cfg.Knobs)
	s.modelsJSON = s.buildModelsJSON()
	return s
}

// Name returns the configured name.
func (s *Server) Name() string { return s.cfg.Name }

// Knobs returns the current server-wide knobs.
func (s *Server) Knobs() Knobs { return *s.knobs.Load() }

// SetKnobs replaces the server-wide knobs (defaults filled in).
func (s *Server) SetKnobs(k Knobs) {
	k = k.withDefaults()
	s.knobs.Store(&k)
}

// Start listens on addr (e.g. "127.0.0.1:0") and serves in the background until ctx ends or
// Close is called. It returns once the listener is open, so Addr is valid afterwards.
func (s *Server) Start(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("simulator %s: listen %s: %w", s.cfg.Name, addr, err)
	}
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelDebug),
	}
	s.mu.Lock()
	if s.srv != nil {
		s.mu.Unlock()
		ln.Close()
		return fmt.Errorf("simulator %s: already started", s.cfg.Name)
	}
	s.ln, s.srv, s.done = ln, srv, make(chan struct{})
	s.mu.Unlock()
	s.cfg.Logger.Info("simulator listening", "name", s.cfg.Name, "addr", ln.Addr().String())
	go func() {
		defer close(s.done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.cfg.Logger.Error("simulator serve", "name", s.cfg.Name, "err", err)
		}
	}()
	go func() {
		select {
		case <-ctx.Done():
			s.Close()
		case <-s.done:
		}
	}()
	return nil
}

// Addr returns the listening address (host:port), or "" before Start.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// BaseURL returns the base URL routes point at: "http://<addr>/v1".
func (s *Server) BaseURL() string { return "http://" + s.Addr() + "/v1" }

// Close stops the server at once, closing open connections (streams break mid-way, as when
// a provider dies). It is safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	srv, done := s.srv, s.done
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	err := srv.Close()
	<-done
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// Shutdown stops accepting connections and waits for active requests until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	srv := s.srv
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	return srv.Shutdown(ctx)
}

// Handler returns the simulator's HTTP handler (for use without Start, e.g. httptest).
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == "/healthz":
		s.stats.count(pathHealthz)
		w.Header()["Content-Type"] = ctText
		io.WriteString(w, "ok\n")
		return
	case p == "/sim/stats":
		s.serveStats(w, r)
		return
	case p == "/sim/config":
		s.serveConfig(w, r)
		return
	case p == "/metrics":
		s.serveMetrics(w, r)
		return
	}
	if d, rest, ok := dialectPath(p); ok {
		s.serveDialect(w, r, d, rest) // a real server's dialect (dialect.go)
		return
	}
	idx, h := s.route(p)
	s.stats.count(idx)
	if h == nil {
		writeError(w, http.StatusNotFound, "not_found_error", "unknown path "+p, false)
		return
	}
	if idx == pathModels {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method not allowed", false)
			return
		}
		h(w, r, nil)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method not allowed", idx == pathMessages)
		return
	}
	s.serveInference(w, r, idx, h)
}

type handlerFunc func(w http.ResponseWriter, r *http.Request, c *call)

// route maps a path to its counter index and handler.
func (s *Server) route(p string) (int, handlerFunc) {
	switch p {
	case "/v1/chat/completions":
		return pathChat, s.chat
	case "/v1/completions":
		return pathCompletions, s.completions
	case "/v1/embeddings":
		return pathEmbeddings, s.embeddings
	case "/v1/responses":
		return pathResponses, s.responses
	case "/v1/messages":
		return pathMessages, s.messages
	case "/v1/systemone":
		return pathSystemOne, s.systemone
	case "/v1/models":
		return pathModels, s.models
	}
	return pathOther, nil
}

// nextID returns a short unique suffix for response IDs.
func (s *Server) nextID(prefix string) string {
	n := s.idSeq.Add(1)
	b := make([]byte, 0, len(prefix)+len(s.cfg.Name)+20)
	b = append(b, prefix...)
	b = append(b, s.cfg.Name...)
	b = append(b, '-')
	b = appendHex(b, n)
	return string(b)
}

func appendHex(b []byte, n uint64) []byte {
	const hex = "0123456789abcdef"
	var tmp [16]byte
	i := len(tmp)
	for {
		i--
		tmp[i] = hex[n&0xf]
		n >>= 4
		if n == 0 {
			break
		}
	}
	return append(b, tmp[i:]...)
}

// chance reports whether an event of probability p happens.
func chance(p float64) bool {
	if p <= 0 {
		return false
	}
	return p >= 1 || rand.Float64() < p
}
