package openapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// ErrIncompleteStream: a stream lacks its documented terminal event.
var ErrIncompleteStream = errors.New("openapi: stream ends without its terminal event")

// CheckStreamTerminal reports whether a text/event-stream body of a 200 response ends with
// the terminal event the document names in x-sse-terminal ("[DONE]" data, or an event name
// such as message_stop or response.completed). It returns ErrIncompleteStream otherwise.
func (s *Spec) CheckStreamTerminal(method, pathTemplate string, body []byte) error {
	ctx := fmt.Sprintf("%s %s", strings.ToUpper(method), pathTemplate)
	respPtr, err := s.responsePointer(method, pathTemplate, http.StatusOK)
	if err != nil {
		return fmt.Errorf("%s: %w", ctx, err)
	}
	terminal, _ := asMap(asMap(asMap(s.at(respPtr))["content"])["text/event-stream"])["x-sse-terminal"].(string)
	if terminal == "" {
		return fmt.Errorf("%s: %w: text/event-stream", ctx, ErrUndocumentedContentType)
	}
	events := ParseSSE(body)
	if len(events) == 0 {
		return fmt.Errorf("%s: %w: no event", ctx, ErrIncompleteStream)
	}
	last := events[len(events)-1]
	if last.Data == terminal || last.Event == terminal {
		return nil
	}
	var probe struct {
		Type string `json:"type"`
	}
	if json.Unmarshal([]byte(last.Data), &probe) == nil && probe.Type == terminal {
		return nil
	}
	return fmt.Errorf("%s: %w: want %q last, got event %q data %.80q", ctx, ErrIncompleteStream, terminal, last.Event, last.Data)
}

// validateSSE parses body as server-sent events and validates each event's data.
func (s *Spec) validateSSE(mtPtr string, body []byte) error {
	sch := s.schemas[mtPtr+"/x-sse-data"]
	events := ParseSSE(body)
	if len(events) == 0 {
		return fmt.Errorf("%w: stream holds no event", ErrInvalidBody)
	}
	for i, ev := range events {
		if ev.Data == "[DONE]" || sch == nil {
			continue
		}
		if err := validateJSON(sch, []byte(ev.Data)); err != nil {
			return fmt.Errorf("event %d (%q): %w", i, ev.Event, err)
		}
		if ev.Event != "" {
			// Named events repeat their name in the data's "type".
			var probe struct {
				Type *string `json:"type"`
			}
			if json.Unmarshal([]byte(ev.Data), &probe) == nil && probe.Type != nil && *probe.Type != ev.Event {
				return fmt.Errorf("%w: event %d is named %q but its type is %q", ErrInvalidBody, i, ev.Event, *probe.Type)
			}
		}
	}
	return nil
}

// Event is one server-sent event.
type Event struct {
	Event string // the event field, empty when absent
	Data  string // data lines joined with "\n"
}

// ParseSSE splits a text/event-stream body into events, following the WHATWG rules:
// lines end in CRLF, LF or CR; a blank line ends an event; lines starting with ':' are
// comments; a single space after the colon is dropped. Events without data are skipped.
func ParseSSE(body []byte) []Event {
	text := strings.ReplaceAll(strings.ReplaceAll(string(body), "\r\n", "\n"), "\r", "\n")
	var out []Event
	var ev Event
	var data []string
	hasData := false
	flush := func() {
		if hasData {
			ev.Data = strings.Join(data, "\n")
			out = append(out, ev)
		}
		ev, data, hasData = Event{}, nil, false
	}
	for _, line := range strings.Split(text, "\n") {
		if line == "" {
			flush()
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			ev.Event = value
		case "data":
			data = append(data, value)
			hasData = true
		}
	}
	flush()
	return out
}
