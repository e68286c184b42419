package feedbus

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// The server takes connections at URL and passes a publish on to a subscriber; a bad
// address is refused before anything starts.
func TestStart(t *testing.T) {
	s, err := Start("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.HasPrefix(s.URL(), "nats://127.0.0.1:") || strings.HasSuffix(s.URL(), ":0") {
		t.Fatalf("URL %q", s.URL())
	}
	nc, err := nats.Connect(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync("x.y")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Publish("x.y", []byte("hej")); err != nil {
		t.Fatal(err)
	}
	m, err := sub.NextMsg(10 * time.Second)
	if err != nil || string(m.Data) != "hej" {
		t.Fatalf("got %v, %v", m, err)
	}
	for _, bad := range []string{"nohost", "127.0.0.1:http", "127.0.0.1:99999"} {
		if s, err := Start(bad, nil); err == nil {
			s.Close()
			t.Errorf("Start(%q) started", bad)
		}
	}
}
