package translate

import (
	"crypto/sha256"
	"encoding/base64"
	"hash"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/dataplane/dialect"
)

// Options say which server a translation talks to (its dialect table: where reasoning and
// stop strings are, how to ask for thinking) and what the request asked that the answer
// may need (its stop sequences). The zero value is the OpenAI dialect.
type Options struct {
	Dialect *dialect.Dialect
	// Stops are the request's stop sequences: a server that only says that one matched
	// (TGI's finish_reason stop_sequence) gets the matched one named when there is one.
	Stops []string
}

func (o *Options) dialect() *dialect.Dialect {
	if o == nil || o.Dialect == nil {
		return dialect.Default()
	}
	return o.Dialect
}

// stopKind classifies a finish: finish_reason, the choice's stop-string member (seq, ""
// when absent or a token ID) and whether tools were called. It returns the kind and, for
// a stop sequence, the sequence ("" when the server did not name it and it is ambiguous).
func (o *Options) stopKind(finish, seq string, sawTools bool) (stopReason, string) {
	d := o.dialect()
	if d.StopSequenceFinish != "" && finish == d.StopSequenceFinish && !sawTools {
		if seq == "" && len(o.stopList()) == 1 {
			seq = o.Stops[0]
		}
		return stopSequence, seq
	}
	return classifyFinish(finish, seq, sawTools), seq
}

func (o *Options) stopList() []string {
	if o == nil {
		return nil
	}
	return o.Stops
}

// stopString reads the dialect's stop-string member of a chat choice (a string only: a
// number is a stop token).
func (o *Options) stopString(choice gjson.Result) string {
	for _, f := range o.dialect().StopString {
		if v := choice.Get(f); v.Type == gjson.String {
			return v.Str
		}
	}
	return ""
}

// reasoningOf reads the dialect's reasoning member of a chat message or delta (null and
// empty are absent).
func (o *Options) reasoningOf(msg gjson.Result) string {
	for _, f := range o.dialect().Reasoning {
		if v := msg.Get(f); v.Type == gjson.String && v.Str != "" {
			return v.Str
		}
	}
	return ""
}

// signature is the signature of a thinking block the gateway hands out: a digest of the
// thinking text, so that a replayed block can be recognised (clients must send thinking
// blocks back unchanged; the servers behind translation do not sign).
type signature struct{ h hash.Hash }

func (s *signature) write(t string) {
	if s.h == nil {
		s.h = sha256.New()
	}
	s.h.Write([]byte(t))
}

func (s *signature) sum() string {
	if s.h == nil {
		s.h = sha256.New()
	}
	b := s.h.Sum(nil)
	s.h = nil
	return "sekgate." + base64.RawURLEncoding.EncodeToString(b[:18])
}

func signText(t string) string {
	var s signature
	s.write(t)
	return s.sum()
}
