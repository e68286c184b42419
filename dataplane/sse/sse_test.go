package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

type ev struct {
	raw, data, name string
	hasData         bool
}

func readAll(t testing.TB, in string, max int) ([]ev, error) {
	r := NewReader(strings.NewReader(in), max)
	var out []ev
	for {
		e, err := r.Next()
		if err != nil {
			if err == io.EOF {
				return out, nil
			}
			return out, err
		}
		out = append(out, ev{string(e.Raw), string(e.Data), string(e.Name), e.Data != nil})
	}
}

func TestReader(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []ev
		err  error
	}{
		{"two events", "data: {\"a\":1}\n\ndata: [DONE]\n\n", []ev{
			{"data: {\"a\":1}\n\n", `{"a":1}`, "", true}, {"data: [DONE]\n\n", "[DONE]", "", true}}, nil},
		{"crlf", "data: x\r\n\r\n", []ev{{"data: x\r\n\r\n", "x", "", true}}, nil},
		{"multi data lines", "data: a\ndata:b\ndata\n\n", []ev{{"data: a\ndata:b\ndata\n\n", "a\nb\n", "", true}}, nil},
		{"named event", "event: message_start\ndata: {}\n\n", []ev{{"event: message_start\ndata: {}\n\n", "{}", "message_start", true}}, nil},
		{"comment only", ": keep-alive\n\n", []ev{{": keep-alive\n\n", "", "", false}}, nil},
		{"comment inside event does not split data", "data: {\"a\":\n: ping\ndata: 1}\n\n", []ev{{"data: {\"a\":\n: ping\ndata: 1}\n\n", "{\"a\":\n1}", "", true}}, nil},
		{"leading blank lines skipped", "\n\r\ndata: x\n\n", []ev{{"data: x\n\n", "x", "", true}}, nil},
		{"last event without its blank line", "data: x\n", []ev{{"data: x\n\n", "x", "", true}}, nil},
		{"done without blank line after an event", "data: {}\n\ndata: [DONE]\r\n", []ev{{"data: {}\n\n", "{}", "", true},
			{"data: [DONE]\r\n\n", "[DONE]", "", true}}, nil},
		{"empty data frame", "data: \n\n", []ev{{"data: \n\n", "", "", true}}, nil},
		{"truncated", "data: x\ndata: y", nil, ErrTruncated},
		{"truncated mid line", "data: x", nil, ErrTruncated},
		{"empty", "", nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := readAll(t, c.in, 0)
			if !errors.Is(err, c.err) {
				t.Fatalf("err = %v, want %v", err, c.err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %d events %+v, want %d", len(got), got, len(c.want))
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("event %d = %+v, want %+v", i, got[i], c.want[i])
				}
			}
		})
	}
}

func TestEventTooLarge(t *testing.T) {
	big := "data: " + strings.Repeat("x", 100) + "\n\n"
	if _, err := readAll(t, big, 64); !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("err = %v", err)
	}
	// Many lines adding up past the limit count too.
	many := strings.Repeat("data: xxxxxxxxxx\n", 10) + "\n"
	if _, err := readAll(t, many, 100); !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("err = %v", err)
	}
	// A line longer than the bufio buffer but under the limit passes.
	long := "data: " + strings.Repeat("y", 40<<10) + "\n\n"
	got, err := readAll(t, long, 0)
	if err != nil || len(got) != 1 || len(got[0].data) != 40<<10 {
		t.Fatalf("long line: %v, %d events", err, len(got))
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("data: {\"a\":1}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("event: x\r\ndata\r\n\r\n: c\n\n"))
	f.Add([]byte("data: x"))
	f.Add([]byte("\n\n\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewReader(bytes.NewReader(in), 1024)
		total := 0
		for {
			e, err := r.Next()
			if err != nil {
				break
			}
			if len(e.Raw) == 0 || len(e.Raw) > 1024 || e.Raw[len(e.Raw)-1] != '\n' {
				t.Fatalf("bad raw %q", e.Raw)
			}
			total += len(e.Raw)
			if total > len(in) {
				t.Fatalf("read more than input")
			}
		}
	})
}

func BenchmarkReader(b *testing.B) {
	for _, c := range []struct {
		name string
		text string
	}{{"token", "hello"}, {"2KiB", strings.Repeat("hello ", 340)}} {
		chunk := `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"` +
			c.text + `"},"finish_reason":null}]}` + "\n\n"
		in := []byte(strings.Repeat(chunk, 100))
		b.Run(c.name, func(b *testing.B) {
			rd := bytes.NewReader(in)
			r := NewReader(rd, 0)
			b.ReportAllocs()
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				rd.Reset(in)
				r.Reset(rd)
				for {
					if _, err := r.Next(); err != nil {
						break
					}
				}
			}
		})
	}
}

func TestFinish(t *testing.T) {
	cases := []struct {
		name string
		rest string
		max  int
		want bool
	}{
		{"nothing left", "", 10, true},
		{"trailing blank lines", "\n\n", 10, true},
		{"more than max", strings.Repeat("x", 40<<10), 1 << 10, false},
		{"within max", strings.Repeat("x", 40<<10), 64 << 10, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := NewReader(strings.NewReader("data: [DONE]\n\n"+c.rest), 0)
			if e, err := r.Next(); err != nil || string(e.Data) != "[DONE]" {
				t.Fatalf("%q %v", e.Data, err)
			}
			if got := r.Finish(c.max); got != c.want {
				t.Fatalf("Finish = %v, want %v", got, c.want)
			}
		})
	}
	r := NewReader(iotest.ErrReader(errors.New("reset")), 0)
	if r.Finish(10) {
		t.Fatal("Finish reported a failed stream as ended")
	}
}
