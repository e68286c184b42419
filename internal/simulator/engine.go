package simulator

import (
	"container/list"
	"context"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/tidwall/gjson"
)

// EngineConfig makes the simulator schedule like a vLLM replica: a number of slots
// (requests running at once), a FIFO waiting queue in front of them, a prefill time per
// prompt token that its prefix cache does not hold plus a fixed overhead (the time to first
// token), a time per output token, and an LRU prefix cache of fixed-size token blocks. The
// zero value (Slots 0) turns the engine off: answers are as instant as the knobs say.
//
// Simplifications: each slot runs its request on its own (a running request's pace does
// not depend on the others), and a prompt's blocks enter the cache when its prefill
// starts. Tokens are the simulator's words (CountTokens); a block is identified by the hash
// of every token up to its end, as vLLM's block hashes chain.
type EngineConfig struct {
	// Slots is how many requests run at once (0: engine off).
	Slots int `json:"slots"`
	// Overhead is the fixed part of every request's time to first token.
	Overhead time.Duration `json:"overhead"`
	// PrefillPerToken is the time per prompt token not found in the prefix cache.
	PrefillPerToken time.Duration `json:"prefill_per_token"`
	// PerOutputToken paces generation after the first token.
	PerOutputToken time.Duration `json:"per_output_token"`
	// BlockTokens is the prefix cache's block size in tokens (default 16, vLLM's).
	BlockTokens int `json:"block_tokens"`
	// CacheBlocks is the prefix cache's capacity in blocks (default 8192).
	CacheBlocks int `json:"cache_blocks"`
}

func (c EngineConfig) withDefaults() EngineConfig {
	if c.BlockTokens <= 0 {
		c.BlockTokens = 16
	}
	if c.CacheBlocks <= 0 {
		c.CacheBlocks = 8192
	}
	return c
}

// engine is the scheduler state of one simulator.
type engine struct {
	cfg EngineConfig

	mu      sync.Mutex
	running int
	waiting list.List // of chan struct{}, FIFO
	// usedBlocks are the KV blocks of running requests (prompt and output).
	usedBlocks int
	cache      lru
	// Prefix-cache counters in tokens (vLLM's prefix_cache_queries / _hits), and finished
	// requests.
	queries, hits, done int64
	// The finished requests' time in prefill and running, in total (vLLM's histograms
	// request_prefill_time_seconds and request_inference_time_seconds, sum).
	prefillTime, runTime time.Duration
}

func newEngine(cfg EngineConfig) *engine {
	cfg = cfg.withDefaults()
	e := &engine{cfg: cfg}
	e.cache.init(cfg.CacheBlocks)
	return e
}

// admission is one request's passage through the engine.
type admission struct {
	ttft   time.Duration
	blocks int
	start  time.Time // when it took its slot
}

// admit waits in FIFO order for a slot (false when ctx ends first), then looks the prompt's
// blocks up in the prefix cache and returns the request's time to first token.
func (e *engine) admit(ctx context.Context, prompt []uint64, outTokens int) (admission, bool) {
	e.mu.Lock()
	if e.running < e.cfg.Slots && e.waiting.Len() == 0 {
		e.running++
	} else {
		ch := make(chan struct{})
		el := e.waiting.PushBack(ch)
		e.mu.Unlock()
		select {
		case <-ch: // the slot was handed over (running already counts it)
		case <-ctx.Done():
			e.mu.Lock()
			select {
			case <-ch: // handed over meanwhile: give it on
				e.handOver()
			default:
				e.waiting.Remove(el)
			}
			e.mu.Unlock()
			return admission{}, false
		}
		e.mu.Lock()
	}
	defer e.mu.Unlock()
	hitBlocks := 0
	bt := e.cfg.BlockTokens
	full := len(prompt) / bt
	for b := range full {
		h := prompt[(b+1)*bt-1]
		if hitBlocks == b && e.cache.touch(h) {
			hitBlocks++
			continue
		}
		e.cache.add(h)
	}
	hitTokens := hitBlocks * bt
	e.queries += int64(len(prompt))
	e.hits += int64(hitTokens)
	a := admission{
		ttft:   e.cfg.Overhead + time.Duration(len(prompt)-hitTokens)*e.cfg.PrefillPerToken,
		blocks: (len(prompt) + outTokens + bt - 1) / bt,
		start:  time.Now(),
	}
	e.usedBlocks += a.blocks
	return a, true
}

// release frees a's slot: the next waiting request gets it.
func (e *engine) release(a admission) {
	e.mu.Lock()
	e.usedBlocks -= a.blocks
	e.done++
	e.prefillTime += a.ttft
	e.runTime += time.Since(a.start)
	e.handOver()
	e.mu.Unlock()
}

// handOver gives a freed slot to the first waiting request, or frees it (e.mu held).
func (e *engine) handOver() {
	if f := e.waiting.Front(); f != nil {
		e.waiting.Remove(f)
		close(f.Value.(chan struct{}))
		return
	}
	e.running--
}

// engineStats is what /metrics reports.
type engineStats struct {
	running, waiting     int
	kvUse                float64
	queries, hits, done  int64
	prefillTime, runTime time.Duration
}

func (e *engine) stats() engineStats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return engineStats{running: e.running, waiting: e.waiting.Len(),
		kvUse:   min(1, float64(e.usedBlocks)/float64(e.cfg.CacheBlocks)),
		queries: e.queries, hits: e.hits, done: e.done, prefillTime: e.prefillTime, runTime: e.runTime}
}

// promptTokens returns the request's prompt as chained token hashes: element i hashes
// tokens 0..i, so a block's identity is its last token's entry. The prompt is the text of
// system, instructions, messages (in order), prompt and input, as the token count reads it.
//
// A request's cache_salt seeds the chain, as vLLM hashes it into the first block's extra
// keys (vllm/v1/core/kv_cache_utils.py): requests with different salts share no block,
// requests with the same salt (or none) share their common prefix.
func promptTokens(root gjson.Result) []uint64 {
	var out []uint64
	h := saltSeed(root.Get("cache_salt"))
	add := func(text string) {
		for i := 0; i < len(text); {
			for i < len(text) && isSpace(text[i]) {
				i++
			}
			j := i
			for j < len(text) && !isSpace(text[j]) {
				j++
			}
			if j > i {
				h = xxhash.Sum64String(text[i:j]) ^ (h * 0x100000001b3)
				out = append(out, h)
			}
			i = j
		}
	}
	var walk func(v gjson.Result)
	walk = func(v gjson.Result) {
		switch {
		case v.Type == gjson.String:
			add(v.Str)
		case v.IsArray():
			v.ForEach(func(_, x gjson.Result) bool { walk(x); return true })
		case v.IsObject():
			for _, k := range [...]string{"text", "content", "output"} {
				if f := v.Get(k); f.Exists() {
					walk(f)
				}
			}
		}
	}
	for _, k := range [...]string{"system", "instructions", "messages", "prompt", "input"} {
		if v := root.Get(k); v.Exists() {
			walk(v)
		}
	}
	return out
}

// saltSeed is the start of a prompt's hash chain: 0 without a salt, else an odd number
// from the salt (so that the chain's multiplier never makes it 0).
func saltSeed(salt gjson.Result) uint64 {
	if salt.Type != gjson.String || salt.Str == "" {
		return 0
	}
	return xxhash.Sum64String(salt.Str) | 1
}

func isSpace(b byte) bool {
	switch b {
	case ' ', '\t', '\n', '\r', '\v', '\f':
		return true
	}
	return false
}

// lru is a set of block hashes with least-recently-used eviction.
type lru struct {
	cap   int
	order list.List // of uint64, most recent first
	at    map[uint64]*list.Element
}

func (c *lru) init(capacity int) {
	c.cap = capacity
	c.at = make(map[uint64]*list.Element, capacity)
}

// touch reports whether h is cached, marking it recently used.
func (c *lru) touch(h uint64) bool {
	el, ok := c.at[h]
	if ok {
		c.order.MoveToFront(el)
	}
	return ok
}

// add caches h (evicting the least recently used block when full).
func (c *lru) add(h uint64) {
	if el, ok := c.at[h]; ok {
		c.order.MoveToFront(el)
		return
	}
	if c.order.Len() >= c.cap {
		last := c.order.Back()
		delete(c.at, last.Value.(uint64))
		c.order.Remove(last)
	}
	c.at[h] = c.order.PushFront(h)
}
